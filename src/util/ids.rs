//! Fresh random ids (an ElizaOS user, a W3C trace context) without a random-number
//! crate: SHA-256 of the process, the clock, a counter and a stack address, which is
//! unique per call and unpredictable enough for ids that are not secrets.

use std::sync::atomic::{AtomicU64, Ordering};

use sha2::{Digest, Sha256};

static CALLS: AtomicU64 = AtomicU64::new(0);

/// `N` (at most 32) fresh bytes.
pub(crate) fn fresh<const N: usize>() -> [u8; N] {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default()
        .as_nanos();
    let here = 0u8;
    let mut hasher = Sha256::new();
    hasher.update(std::process::id().to_le_bytes());
    hasher.update(now.to_le_bytes());
    hasher.update(CALLS.fetch_add(1, Ordering::Relaxed).to_le_bytes());
    hasher.update((&here as *const u8 as usize).to_le_bytes());
    let digest = hasher.finalize();
    let mut out = [0u8; N];
    out.copy_from_slice(&digest[..N]);
    out
}

/// Lowercase hex.
pub(crate) fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    #[test]
    fn ids_differ_call_to_call() {
        let a: [u8; 16] = super::fresh();
        let b: [u8; 16] = super::fresh();
        assert_ne!(a, b);
        assert_eq!(super::hex(&[0, 171, 255]), "00abff");
    }
}
