//! The conversation loops: single and static (scripted) turns, and dynamic conversations.

pub(crate) mod dynamic;
