//! End-to-end tests of the `calib` binary (one test binary, several modules).

mod arena;
mod binary_maps;
mod chunked;
mod commands;
mod common;
#[cfg(feature = "wgpu")]
mod device_compare;
mod errors;
mod formats;
mod outputs;
mod passes;
mod saved_formats;
#[cfg(feature = "sql")]
mod sql;
mod states;
mod study;
mod tables;
mod uncertainty;
mod weights;
