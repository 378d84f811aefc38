//! The shared async runtime: one for every case of the process, so connection pools and
//! the process reaper are shared.

use std::sync::OnceLock;

/// The runtime every case runs on, started on first use.
pub(crate) fn runtime() -> &'static tokio::runtime::Runtime {
    static RT: OnceLock<tokio::runtime::Runtime> = OnceLock::new();
    RT.get_or_init(|| {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .thread_name("agentest")
            .enable_all()
            .build()
            .expect("failed to start the async runtime")
    })
}
