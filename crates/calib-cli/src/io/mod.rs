//! What the command line reads and writes: the file formats are calib-io's; here, which arrays
//! of a file are the scores and labels of a split ([`DataSpec`], [`Dataset`]) and evaluation
//! states on disk.

mod dataset;
mod spec;
mod state;

pub use calib_io::{
    Array, NpyChunks, OutArray, OutValues, RowChunk, Scores, TableChunks, Values, is_table,
    read_npy_file, write_arrays, write_file,
};
pub use dataset::Dataset;
pub use dataset::{PROBABILITY_FLOOR, to_log_probabilities};
pub(crate) use dataset::{interpret, read_labels_file, read_weights_file};
pub use spec::{DataSpec, ScoreInput};
pub use state::{read_state, write_state};
