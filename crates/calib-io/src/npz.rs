//! `.npz` archives (numpy's `savez` / `savez_compressed`): a zip of `.npy` members, each read
//! by [`read_npy`] straight from the archive (stored members) or the decompressor.

use std::fs::File;
use std::io::BufReader;
use std::path::Path;

use zip::{CompressionMethod, ZipArchive};

use crate::array::Array;
use crate::error::{IoError, Result};
use crate::npy::read_npy;
use crate::store::ArrayStore;

/// An opened `.npz` archive.
pub struct NpzStore {
    origin: String,
    archive: ZipArchive<BufReader<File>>,
    file_len: u64,
}

impl NpzStore {
    /// Opens `path`.
    ///
    /// # Errors
    /// [`IoError::Input`] when the file is missing or not a zip archive.
    pub fn open(path: &Path) -> Result<Self> {
        let origin = path.display().to_string();
        let file = File::open(path).map_err(|e| IoError::input(&origin, e.to_string()))?;
        let file_len = file.metadata().map_err(|e| IoError::input(&origin, e.to_string()))?.len();
        let archive = ZipArchive::new(BufReader::new(file))
            .map_err(|e| IoError::input(&origin, format!("not a valid .npz archive ({e})")))?;
        Ok(Self { origin, archive, file_len })
    }
}

impl ArrayStore for NpzStore {
    fn origin(&self) -> &str {
        &self.origin
    }

    fn names(&self) -> Vec<String> {
        let mut names: Vec<String> = self
            .archive
            .file_names()
            .filter_map(|n| n.strip_suffix(".npy"))
            .map(str::to_string)
            .collect();
        names.sort();
        names
    }

    fn read(&mut self, name: &str) -> Result<Option<Array>> {
        let origin = format!("{}:{name}", self.origin);
        let member = match self.archive.by_name(&format!("{name}.npy")) {
            Ok(member) => member,
            Err(zip::result::ZipError::FileNotFound) => return Ok(None),
            Err(e) => return Err(IoError::input(origin, format!("corrupt archive member ({e})"))),
        };
        // A stored member's length is bounded by the file; a compressed one's claim is not
        // trusted (the buffer then grows as data decompresses).
        let stream_len = (member.compression() == CompressionMethod::Stored)
            .then(|| member.size().min(self.file_len));
        read_npy(member, origin, stream_len).map(Some)
    }
}
