//! Parts of `lifecycle_model_engine.rs`: the reference model and the engine under test.
#![allow(dead_code)]

pub mod engine;
pub mod model;
