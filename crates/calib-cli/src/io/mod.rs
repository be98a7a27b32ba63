//! Reading data files (`.npz`, `.npy`, `.safetensors`, CSV, Parquet, Arrow IPC) and writing
//! outputs.

mod array;
mod csv;
mod dataset;
mod npy;
mod npy_chunks;
mod npy_header;
mod npz;
mod parquet_groups;
mod parquet_pages;
mod rle;
mod safetensors;
mod spec;
mod state;
mod store;
mod table;
mod write;

pub use array::{Array, Scores, Values};
pub use dataset::Dataset;
pub(crate) use dataset::{interpret, read_labels_file, to_log_probabilities};
pub use npy::read_npy_file;
pub use npy_chunks::NpyChunks;
pub use spec::{DataSpec, ScoreInput};
pub use state::{read_state, write_state};
pub use table::{RowChunk, TableChunks, is_table, read_table};
pub use write::{OutArray, OutValues, write_arrays, write_file};
