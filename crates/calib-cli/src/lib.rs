//! # calib-cli
//!
//! The `calib` command line, thin over [`calib_core`], [`calib_train`] and [`calib_io`]:
//! `eval`, `fit`, `apply`, `plot`, `compare`, `arena`, `bench`, `study` and `merge`, and with the `sql`
//! feature `sql` and `worker` (DataFusion); reading `.npz`, `.npy`, `.safetensors`, CSV,
//! Parquet and Arrow IPC. The pieces are a library too, so examples and tests use the same
//! code: [`cli`] holds the arguments, [`commands`] runs them, [`io`] picks a split's scores and
//! labels from a file, [`fitting`] fits any method by name, [`comparison`] fits methods on one
//! split and measures them on another, [`arena`] scores them over many experiments, [`study`] ranks them under Nixon et al.'s metric
//! variants, [`diagnosis`] says why a calibrated ECE got worse, [`top_label`] measures top-label
//! calibrators, [`table`] prints reports and [`plot`] draws reliability diagrams.
//!
//! ```no_run
//! use calib_cli::io::{DataSpec, Dataset};
//! let test = Dataset::load(&DataSpec::new("densenet40_cifar10.npz"), "test")?;
//! assert_eq!(test.n_classes(), 10);
//! # Ok::<(), calib_cli::CliError>(())
//! ```
#![warn(missing_docs)]

pub mod arena;
pub mod cli;
pub mod commands;
pub mod comparison;
pub mod diagnosis;
pub mod error;
pub mod evaluation;
pub mod fitting;
pub mod io;
pub mod plot;
pub mod probabilities;
pub mod study;
pub mod table;
pub mod top_label;
pub mod trace;

pub use error::{CliError, Result};
