//! [`write_atomic`]: every file calib writes (arrays, calibrators, states, plots) is written
//! whole or not at all.

use std::io::Write;
use std::path::Path;

/// Writes `bytes` to a temporary file in `path`'s directory, syncs it and renames it over
/// `path`, so an interrupted write never leaves a partial file or clobbers an existing one.
///
/// A symbolic link is followed (the link stays, its target is replaced). An existing path that
/// is not a regular file (`/dev/null`, a pipe, a terminal) is written in place: renaming over
/// it would replace the device with a file, and run as root that breaks the machine.
///
/// # Errors
/// The I/O error of the step that failed; the temporary file is removed.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    match std::fs::metadata(path) {
        Ok(meta) if !meta.is_file() && !meta.is_dir() => {
            return std::fs::OpenOptions::new()
                .write(true)
                .open(path)
                .and_then(|mut f| f.write_all(bytes));
        }
        Ok(_) if path.is_symlink() => {
            let target = std::fs::canonicalize(path)?;
            return write_atomic(&target, bytes);
        }
        _ => {}
    }
    let dir = path.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."));
    let name = path.file_name().ok_or(std::io::ErrorKind::InvalidInput)?;
    let tmp = dir.join(format!(".{}.tmp-{}", name.to_string_lossy(), std::process::id()));
    let result = (|| {
        let mut file = std::fs::File::create(&tmp)?;
        file.write_all(bytes)?;
        file.sync_all()?;
        std::fs::rename(&tmp, path)
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch(name: &str) -> std::path::PathBuf {
        let dir = std::env::temp_dir().join(format!("calib-atomic-{}-{name}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    #[test]
    fn replaces_a_file_and_leaves_no_temporary() {
        let dir = scratch("file");
        let path = dir.join("out.json");
        std::fs::write(&path, "old").unwrap();
        write_atomic(&path, b"new").unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"new");
        assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 1);
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn a_missing_directory_fails_and_leaves_nothing() {
        let dir = scratch("missing");
        let path = dir.join("no/such/dir/out.json");
        assert!(write_atomic(&path, b"new").is_err());
        assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 0);
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[cfg(unix)]
    #[test]
    fn follows_links_and_writes_devices_in_place() {
        use std::os::unix::fs::FileTypeExt;
        let dir = scratch("link");
        let (target, link) = (dir.join("target.json"), dir.join("link.json"));
        std::fs::write(&target, "old").unwrap();
        std::os::unix::fs::symlink(&target, &link).unwrap();
        write_atomic(&link, b"new").unwrap();
        assert!(link.is_symlink());
        assert_eq!(std::fs::read(&target).unwrap(), b"new");
        std::fs::remove_dir_all(dir).unwrap();

        let null = Path::new("/dev/null");
        if std::fs::metadata(null).is_ok_and(|m| m.file_type().is_char_device()) {
            write_atomic(null, b"discarded").unwrap();
            assert!(std::fs::metadata(null).unwrap().file_type().is_char_device());
        }
    }
}
