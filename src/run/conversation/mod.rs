//! The conversation: one driver ([`driver::Conversation`]) and a policy per mode:
//! scripted turns, a dynamic case's checkpoints, EvalStudio's criteria and an ElizaOS
//! scenario's termination conditions; and the turn they share.

pub(crate) mod checkpoints;
pub(crate) mod conditions;
pub(crate) mod criteria;
pub(crate) mod driver;
pub(crate) mod scripted;
pub(crate) mod turn;

#[cfg(test)]
mod tests;
