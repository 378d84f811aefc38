//! The conversation loops: scripted (single and static), dynamic (checkpoints, or
//! EvalStudio's criteria), and the turn they share.

pub(crate) mod criteria;
pub(crate) mod dynamic;
pub(crate) mod scripted;
pub(crate) mod turn;
