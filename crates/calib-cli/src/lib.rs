//! # calib-cli
//!
//! The `calib` command line, thin over [`calib_core`] and [`calib_train`]: `eval`, `fit`,
//! `apply`, `plot`, `compare` and `bench`, reading `.npz`, `.npy`, `.safetensors` and CSV.
//! The pieces are a library too, so examples and tests use the same code: [`io`] reads data
//! files and writes outputs atomically, [`fitting`] fits any method by name, [`comparison`]
//! fits methods on one split and measures them on another, and [`plot`] draws reliability
//! diagrams.
//!
//! ```no_run
//! use calib_cli::io::{DataSpec, Dataset};
//! let test = Dataset::load(&DataSpec::new("densenet40_cifar10.npz"), "test")?;
//! assert_eq!(test.n_classes(), 10);
//! # Ok::<(), calib_cli::CliError>(())
//! ```
#![warn(missing_docs)]

pub mod cli;
pub mod commands;
pub mod comparison;
pub mod diagnosis;
pub mod error;
pub mod fitting;
pub mod io;
pub mod plot;
pub mod study;
pub mod table;
pub mod top_label;

pub use error::{CliError, Result};
