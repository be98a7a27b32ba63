//! [`ArrayStore`]: a file that holds named arrays (`.npz`, `.safetensors`).

use crate::array::Array;
use crate::error::Result;

/// Named arrays in one file.
pub trait ArrayStore {
    /// The file, for messages.
    fn origin(&self) -> &str;

    /// The array names it holds, sorted.
    fn names(&self) -> Vec<String>;

    /// The array `name`, or `None` when there is none.
    ///
    /// # Errors
    /// [`crate::IoError::Input`] when the array exists but cannot be read.
    fn read(&mut self, name: &str) -> Result<Option<Array>>;
}
