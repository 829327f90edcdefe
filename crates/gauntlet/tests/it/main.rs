//! The CLI's integration tests, one binary split by what they exercise (the layout uv uses):
//! `common` holds the shared context; each module drives one part of the product end to end.

mod agentdojo;
mod agents;
mod audit;
mod calibrate;
mod case_language;
mod check;
mod checkpoints;
mod claims;
mod common;
mod crate_map;
mod events;
mod export;
mod faults;
mod frameworks;
mod gates;
mod init;
mod isolation;
mod judge;
mod online;
mod otlp;
mod readme;
mod real_model;
mod report;
mod resume;
mod review;
mod run;
mod safety;
mod score;
mod services;
mod shadow;
mod simulated_user;
mod tau2_bench;
mod tau_bench;
mod trust;
mod view;
