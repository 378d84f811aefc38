//! The roles around the agent under test: who plays the user (a simulator or a person)
//! and who judges. Every role that answers in JSON is asked through [`ask`].

pub(crate) mod ask;
pub(crate) mod criteria;
pub(crate) mod judge;
pub(crate) mod person;
pub(crate) mod simulator;
