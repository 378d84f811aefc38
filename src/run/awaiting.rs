//! Is the agent waiting for the user? The seed's hybrid detection, in priority order:
//! the reply says so, a tool that asks the user was called, or the text reads as a question.

use std::sync::OnceLock;

use regex::Regex;

use crate::protocol::Reply;
use crate::record::AwaitReason;
use crate::util::tool_name_matches;

/// Tools whose call means the agent waits for the user, unless the config lists others.
pub(crate) const DEFAULT_INPUT_TOOLS: [&str; 3] =
    ["request_confirmation", "ask_user", "get_user_input"];

/// Whether `reply` awaits the user's input, and why. An explicit `awaiting_input: false`
/// is believed too: the agent knows best.
pub(crate) fn detect(reply: &Reply, input_tools: &[String]) -> (bool, AwaitReason) {
    if let Some(declared) = reply.awaiting_input {
        return (declared, AwaitReason::AgentDeclared);
    }
    let asks = |name: &str| match input_tools.is_empty() {
        true => DEFAULT_INPUT_TOOLS
            .iter()
            .any(|t| tool_name_matches(name, t)),
        false => input_tools.iter().any(|t| tool_name_matches(name, t)),
    };
    if reply.tool_calls.iter().any(|c| asks(&c.name)) {
        return (true, AwaitReason::ToolRequiresConfirmation);
    }
    if looks_like_question(&reply.output_text()) {
        return (true, AwaitReason::ContentIsQuestion);
    }
    (false, AwaitReason::Completed)
}

/// The seed's content heuristics: a trailing question mark, an opening question word,
/// or a confirm/verify/proceed question anywhere.
pub(crate) fn looks_like_question(text: &str) -> bool {
    static PATTERNS: OnceLock<[Regex; 3]> = OnceLock::new();
    let [trailing, opening, confirm] = PATTERNS.get_or_init(|| {
        [
            Regex::new(r"\?\s*$").expect("valid"),
            Regex::new(r"(?i)^\s*(what|how|when|where|which|who|please|could you)\b")
                .expect("valid"),
            Regex::new(r"(?i)\b(confirm|verify|proceed|continue)\b[^.!?]*\?").expect("valid"),
        ]
    });
    let text = text.trim();
    !text.is_empty()
        && (trailing.is_match(text) || opening.is_match(text) || confirm.is_match(text))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn priority_declared_then_tools_then_text() {
        let mut r = Reply::text("What type of expense?");
        assert_eq!(detect(&r, &[]), (true, AwaitReason::ContentIsQuestion));
        r.awaiting_input = Some(false);
        assert_eq!(detect(&r, &[]), (false, AwaitReason::AgentDeclared));
        let r = Reply::text("Done.").with_tool_call("ui.ask_user", json!({}), None);
        assert_eq!(
            detect(&r, &[]),
            (true, AwaitReason::ToolRequiresConfirmation)
        );
        assert_eq!(
            detect(&r, &["confirm_order".into()]),
            (false, AwaitReason::Completed)
        );
        assert_eq!(
            detect(&Reply::text("Expense submitted."), &[]),
            (false, AwaitReason::Completed)
        );
    }

    #[test]
    fn question_heuristics() {
        assert!(looks_like_question("Shall I submit it?"));
        assert!(looks_like_question("Please provide the PO number."));
        assert!(looks_like_question("Can you confirm the amount? Thanks."));
        assert!(!looks_like_question("Expense submitted. Reference: EXP-1"));
        assert!(!looks_like_question(""));
    }
}
