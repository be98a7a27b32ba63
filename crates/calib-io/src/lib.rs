//! calib's file formats: the arrays and tables calib reads, and how it writes.
//!
//! - **Arrays** (feature `arrays`): `.npy` whole ([`read_npy_file`]) or in row chunks
//!   ([`NpyChunks`]), `.npz` ([`NpzStore`]) and `.safetensors` ([`SafetensorsStore`]) by array
//!   name, CSV ([`read_csv`]); `.npy`/`.npz` written by [`write_arrays`]. Values are widened
//!   without loss ([`Values`]): f16 and f32 to f32, f64 as is, integers and booleans to i64.
//! - **Tables** (feature `tables`): Parquet and Arrow IPC files and streams in row chunks
//!   ([`TableChunks`]), Parquet row groups decoded on several threads with a fast path for list
//!   columns; [`table::rows`] turns Arrow columns into calib's rows, for this crate and for
//!   calib-datafusion's SQL aggregates alike.
//! - **Atomic writes** (always): [`write_atomic`] writes a temporary file and renames it, so an
//!   interrupted run never leaves half a file.
//!
//! Every error is an [`IoError`] naming the file (and array, row or column) in one line.
//!
//! ```
//! use calib_io::{OutArray, OutValues, Scores, read_npy_file, write_arrays};
//!
//! let path = std::env::temp_dir().join(format!("calib-io-doc-{}.npy", std::process::id()));
//! let out = OutArray {
//!     name: "logits".into(),
//!     shape: vec![2, 2],
//!     values: OutValues::Float(Scores::F32(vec![1.0, 0.0, 0.5, 2.0])),
//! };
//! write_arrays(&path, &[out])?;
//! let read = read_npy_file(&path)?;
//! assert_eq!(read.shape, [2, 2]);
//! # std::fs::remove_file(path).unwrap();
//! # Ok::<(), calib_io::IoError>(())
//! ```

#[cfg(feature = "arrays")]
mod array;
mod atomic;
#[cfg(feature = "arrays")]
mod chunk;
#[cfg(feature = "arrays")]
mod csv;
mod error;
#[cfg(feature = "arrays")]
mod npy;
#[cfg(feature = "arrays")]
mod npz;
#[cfg(feature = "arrays")]
mod safetensors;
#[cfg(feature = "arrays")]
mod store;
#[cfg(feature = "tables")]
pub mod table;
#[cfg(feature = "arrays")]
mod write;

#[cfg(feature = "arrays")]
pub use array::{Array, Scores, Values};
pub use atomic::write_atomic;
#[cfg(feature = "arrays")]
pub use chunk::RowChunk;
#[cfg(feature = "arrays")]
pub use csv::read_csv;
pub use error::{IoError, Result};
#[cfg(feature = "arrays")]
pub use npy::chunks::NpyChunks;
#[cfg(feature = "arrays")]
pub use npy::read_npy_file;
#[cfg(feature = "arrays")]
pub use npz::NpzStore;
#[cfg(feature = "arrays")]
pub use safetensors::SafetensorsStore;
#[cfg(feature = "arrays")]
pub use store::ArrayStore;
#[cfg(feature = "tables")]
pub use table::columns::TableColumns;
#[cfg(feature = "tables")]
pub use table::{RowsError, TableChunks, catching_decoder_panics, is_table, read_table};
#[cfg(feature = "arrays")]
pub use write::{OutArray, OutValues, write_arrays, write_file};
