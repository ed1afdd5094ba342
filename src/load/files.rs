//! Reading files that may be hostile: only regular files are read, never
//! more than a limit, and opening never blocks (a FIFO named as an input
//! would otherwise wait forever for a writer).

use std::fs::File;
use std::io::Read;
use std::path::{Path, PathBuf};

/// Why a file was not read.
#[derive(Debug)]
pub enum ReadError {
    /// The path names something other than a regular file: what it is.
    NotRegular(&'static str),
    /// The file is larger than the limit: its size, or a lower bound.
    TooLarge(u64),
    Io(std::io::Error),
}

impl From<std::io::Error> for ReadError {
    fn from(e: std::io::Error) -> ReadError {
        ReadError::Io(e)
    }
}

/// What a file type is, in words, for messages.
pub fn describe(ft: std::fs::FileType) -> &'static str {
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        if ft.is_fifo() {
            return "a FIFO (named pipe)";
        }
        if ft.is_char_device() {
            return "a character device";
        }
        if ft.is_block_device() {
            return "a block device";
        }
        if ft.is_socket() {
            return "a socket";
        }
    }
    if ft.is_dir() {
        "a directory"
    } else if ft.is_symlink() {
        "a symbolic link"
    } else if ft.is_file() {
        "a regular file"
    } else {
        "not a regular file"
    }
}

/// Opens `path` for reading without blocking and checks, on the open file,
/// that it is a regular file. `follow` says whether a symbolic link as the
/// last component is followed.
pub fn open_regular(path: &Path, follow: bool) -> Result<(File, std::fs::Metadata), ReadError> {
    let mut options = std::fs::OpenOptions::new();
    options.read(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        let mut flags = rustix::fs::OFlags::NONBLOCK;
        if !follow {
            flags |= rustix::fs::OFlags::NOFOLLOW;
        }
        options.custom_flags(flags.bits() as i32);
    }
    let file = match options.open(path) {
        Ok(f) => f,
        Err(e) if !follow && std::fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_symlink()) => {
            let _ = e;
            return Err(ReadError::NotRegular("a symbolic link"));
        }
        Err(e) => return Err(e.into()),
    };
    let meta = file.metadata()?;
    if !meta.is_file() {
        return Err(ReadError::NotRegular(describe(meta.file_type())));
    }
    Ok((file, meta))
}

/// The bytes of the regular file `path`, refusing more than `max_bytes`
/// (checked before reading, and again while reading, for a file that grows).
pub fn read_regular(path: &Path, max_bytes: u64, follow: bool) -> Result<Vec<u8>, ReadError> {
    let (file, meta) = open_regular(path, follow)?;
    let len = meta.len();
    if len > max_bytes {
        return Err(ReadError::TooLarge(len));
    }
    let mut bytes = Vec::with_capacity(len as usize);
    file.take(max_bytes + 1).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > max_bytes {
        return Err(ReadError::TooLarge(bytes.len() as u64));
    }
    Ok(bytes)
}

/// `path` made absolute against the working directory, with `.` and `..`
/// resolved lexically (symbolic links are not followed).
pub fn absolute(path: &Path) -> PathBuf {
    match std::env::current_dir() {
        Ok(cwd) => absolute_in(&cwd, path),
        Err(_) => absolute_in(Path::new(""), path),
    }
}

/// [`absolute`] against the working directory `cwd`, read once by a
/// caller with many paths (each read is a system call).
pub fn absolute_in(cwd: &Path, path: &Path) -> PathBuf {
    use crate::base::paths::{plain_absolute, plain_bytes};
    // A plain relative path below a plain working directory has nothing to
    // resolve: joined, it is what the components build (the common case,
    // taken for each of 10,000 input files).
    if plain_bytes(path).is_some() && plain_absolute(cwd.as_os_str().as_encoded_bytes()) {
        return cwd.join(path);
    }
    absolute_by_components(cwd, path)
}

/// [`absolute_in`], component by component.
fn absolute_by_components(cwd: &Path, path: &Path) -> PathBuf {
    use std::path::Component;
    if path.as_os_str().is_empty() {
        return PathBuf::new();
    }
    let joined = if path.is_absolute() { path.to_path_buf() } else { cwd.join(path) };
    let mut out = PathBuf::new();
    for c in joined.components() {
        match c {
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            other => out.push(other),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_regular_files_within_the_limit_are_read() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("a.yaml");
        std::fs::write(&f, "0123456789").unwrap();
        assert_eq!(read_regular(&f, 10, true).unwrap(), b"0123456789");
        assert!(matches!(read_regular(&f, 9, true), Err(ReadError::TooLarge(10))));
        assert!(matches!(read_regular(dir.path(), 9, true), Err(ReadError::NotRegular("a directory"))));
        #[cfg(unix)]
        {
            assert!(matches!(
                read_regular(Path::new("/dev/zero"), 9, true),
                Err(ReadError::NotRegular("a character device"))
            ));
            let fifo = dir.path().join("fifo");
            rustix::fs::mknodat(rustix::fs::CWD, &fifo, rustix::fs::FileType::Fifo, 0o600.into(), 0).unwrap();
            assert!(matches!(read_regular(&fifo, 9, true), Err(ReadError::NotRegular("a FIFO (named pipe)"))));
            let link = dir.path().join("link.yaml");
            std::os::unix::fs::symlink(&f, &link).unwrap();
            assert!(matches!(read_regular(&link, 10, false), Err(ReadError::NotRegular("a symbolic link"))));
            assert!(read_regular(&link, 10, true).is_ok());
        }
    }

    #[test]
    fn a_path_is_made_absolute_as_its_components_make_it() {
        assert_eq!(absolute_in(Path::new("/r/ex"), Path::new("services/a.yaml")), Path::new("/r/ex/services/a.yaml"));
        assert_eq!(absolute_in(Path::new("/r/ex"), Path::new("../a.yaml")), Path::new("/r/a.yaml"));
        // The shortcut for a plain path below a plain directory gives what
        // the components give, and the rest take the components' way.
        let dirs = ["/r/ex", "/", "/r/ex/", "/r//ex", "/r/./ex", "/r/../ex", ""];
        let paths = ["a.yaml", "services/a.yaml", "./a", "a/../b", "a//b", "a/", "/abs/a", "..", ""];
        for (cwd, path) in dirs.iter().flat_map(|d| paths.iter().map(move |p| (Path::new(d), Path::new(p)))) {
            assert_eq!(absolute_in(cwd, path), absolute_by_components(cwd, path), "{path:?} in {cwd:?}");
        }
    }
}
