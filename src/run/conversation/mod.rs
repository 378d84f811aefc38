//! The conversation loops: scripted (single and static) and dynamic, and the turn they
//! share.

pub(crate) mod dynamic;
pub(crate) mod scripted;
pub(crate) mod turn;
