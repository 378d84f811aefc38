//! The roles around the agent under test: who plays the user (a simulator or a person).

pub(crate) mod person;
pub(crate) mod simulator;
