//! `.npz` archives (numpy's `savez` / `savez_compressed`) read with `npyz`.

use std::fs::File;
use std::io::BufReader;
use std::path::Path;

use npyz::npz::NpzArchive;

use super::array::Array;
use super::npy::read_npy;
use super::store::ArrayStore;
use crate::error::{CliError, Result};

/// An opened `.npz` archive.
pub struct NpzStore {
    origin: String,
    archive: NpzArchive<BufReader<File>>,
}

impl NpzStore {
    /// Opens `path`.
    ///
    /// # Errors
    /// [`CliError::Input`] when the file is missing or not a zip archive.
    pub fn open(path: &Path) -> Result<Self> {
        let origin = path.display().to_string();
        let file = File::open(path).map_err(|e| CliError::input(&origin, e.to_string()))?;
        let archive = NpzArchive::new(BufReader::new(file))
            .map_err(|e| CliError::input(&origin, format!("not a valid .npz archive ({e})")))?;
        Ok(Self { origin, archive })
    }
}

impl ArrayStore for NpzStore {
    fn origin(&self) -> &str {
        &self.origin
    }

    fn names(&self) -> Vec<String> {
        let mut names: Vec<String> = self.archive.array_names().map(str::to_string).collect();
        names.sort();
        names
    }

    fn read(&mut self, name: &str) -> Result<Option<Array>> {
        let origin = format!("{}:{name}", self.origin);
        match self.archive.by_name(name) {
            Ok(Some(npy)) => read_npy(npy, origin).map(Some),
            Ok(None) => Ok(None),
            Err(e) => Err(CliError::input(origin, format!("corrupt archive member ({e})"))),
        }
    }
}
