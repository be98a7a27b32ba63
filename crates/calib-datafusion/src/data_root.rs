//! A worker's data root: the local file system as a worker's scans see it, read-only and
//! confined to one directory. Every path a received plan reads or lists is resolved (symlinks
//! followed) and must lie under the root, else the task fails naming the path; nothing is
//! written, copied, renamed or deleted. Registered as the worker's `file://` object store, it
//! sits under every file scan DataFusion runs there (CSV, Parquet, JSON, Arrow).

use std::fmt;
use std::ops::Range;
use std::path::{Path as FsPath, PathBuf};
use std::sync::Arc;

use async_trait::async_trait;
use datafusion::common::{DataFusionError, Result};
use datafusion::execution::object_store::ObjectStoreUrl;
use datafusion::execution::runtime_env::RuntimeEnv;
use futures::StreamExt;
use futures::stream::BoxStream;
use object_store::local::LocalFileSystem;
use object_store::path::Path;
use object_store::{
    CopyOptions, Error, GetOptions, GetResult, ListResult, MultipartUpload, ObjectMeta,
    ObjectStore, PutMultipartOptions, PutOptions, PutPayload, PutResult,
};

use datafusion::object_store;

/// The local file system under `root` alone, read-only.
#[derive(Debug)]
pub struct DataRoot {
    /// The root, resolved.
    root: PathBuf,
    inner: LocalFileSystem,
}

impl DataRoot {
    /// The store confined to `root` (resolved now: it must exist).
    ///
    /// # Errors
    /// [`DataFusionError::Configuration`] when `root` cannot be resolved or is no directory.
    pub fn new(root: &FsPath) -> Result<Self> {
        let fail = |why: String| {
            DataFusionError::Configuration(format!("data root {}: {why}", root.display()))
        };
        let resolved = root.canonicalize().map_err(|e| fail(e.to_string()))?;
        if !resolved.is_dir() {
            return Err(fail("not a directory".into()));
        }
        Ok(Self { root: resolved, inner: LocalFileSystem::new() })
    }

    /// The root, resolved.
    pub fn root(&self) -> &FsPath {
        &self.root
    }

    /// Makes `root` the `file://` store of `runtime`.
    pub(crate) fn register(root: Arc<Self>, runtime: &RuntimeEnv) {
        runtime.register_object_store(ObjectStoreUrl::local_filesystem().as_ref(), root);
    }

    /// `location` if it resolves (symlinks followed) under the root, else the error naming it.
    fn admit(&self, location: &Path) -> object_store::Result<()> {
        let asked = FsPath::new("/").join(location.as_ref());
        let refuse = |why: String| Error::PermissionDenied {
            path: asked.display().to_string(),
            source: why.into(),
        };
        let resolved = asked.canonicalize().map_err(|e| refuse(format!("cannot resolve: {e}")))?;
        if resolved.starts_with(&self.root) {
            return Ok(());
        }
        Err(refuse(format!(
            "{} is outside the worker's data root {}",
            resolved.display(),
            self.root.display()
        )))
    }

    /// The refusal of a write.
    fn read_only(location: &Path) -> Error {
        Error::PermissionDenied {
            path: format!("/{location}"),
            source: "a calib worker's data root is read-only".into(),
        }
    }
}

impl fmt::Display for DataRoot {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "DataRoot({})", self.root.display())
    }
}

#[async_trait]
impl ObjectStore for DataRoot {
    async fn put_opts(
        &self,
        location: &Path,
        _payload: PutPayload,
        _opts: PutOptions,
    ) -> object_store::Result<PutResult> {
        Err(Self::read_only(location))
    }

    async fn put_multipart_opts(
        &self,
        location: &Path,
        _opts: PutMultipartOptions,
    ) -> object_store::Result<Box<dyn MultipartUpload>> {
        Err(Self::read_only(location))
    }

    async fn get_opts(
        &self,
        location: &Path,
        options: GetOptions,
    ) -> object_store::Result<GetResult> {
        self.admit(location)?;
        self.inner.get_opts(location, options).await
    }

    async fn get_ranges(
        &self,
        location: &Path,
        ranges: &[Range<u64>],
    ) -> object_store::Result<Vec<bytes::Bytes>> {
        self.admit(location)?;
        self.inner.get_ranges(location, ranges).await
    }

    fn delete_stream(
        &self,
        locations: BoxStream<'static, object_store::Result<Path>>,
    ) -> BoxStream<'static, object_store::Result<Path>> {
        locations.map(|l| l.and_then(|l| Err(Self::read_only(&l)))).boxed()
    }

    fn list(&self, prefix: Option<&Path>) -> BoxStream<'static, object_store::Result<ObjectMeta>> {
        match self.admit(prefix.unwrap_or(&Path::default())) {
            Ok(()) => self.inner.list(prefix),
            Err(e) => futures::stream::once(async move { Err(e) }).boxed(),
        }
    }

    async fn list_with_delimiter(&self, prefix: Option<&Path>) -> object_store::Result<ListResult> {
        self.admit(prefix.unwrap_or(&Path::default()))?;
        self.inner.list_with_delimiter(prefix).await
    }

    async fn copy_opts(
        &self,
        _from: &Path,
        to: &Path,
        _options: CopyOptions,
    ) -> object_store::Result<()> {
        Err(Self::read_only(to))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn etc_passwd_through_a_link_in_the_root_is_refused_naming_it() {
        let dir = std::env::temp_dir().join(format!("calib-data-root-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("inside.csv"), "a\n1\n").unwrap();
        let link = dir.join("passwd.csv");
        let _ = std::fs::remove_file(&link);
        std::os::unix::fs::symlink("/etc/passwd", &link).unwrap();
        let root = DataRoot::new(&dir).unwrap();
        let runtime = tokio::runtime::Builder::new_current_thread().build().unwrap();
        let get = |path: &FsPath| {
            let location = Path::from_filesystem_path(path).unwrap();
            runtime.block_on(root.get_opts(&location, GetOptions::default())).map(|_| ())
        };
        assert!(get(&dir.join("inside.csv")).is_ok());
        let e = get(&link).unwrap_err().to_string();
        assert!(e.contains("/etc/passwd is outside the worker's data root"), "{e}");
        let e = get(FsPath::new("/etc/passwd")).unwrap_err().to_string();
        assert!(e.contains("outside the worker's data root"), "{e}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
