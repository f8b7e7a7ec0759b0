//! A scratch directory for tests, removed on drop.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

#[derive(Debug)]
pub struct TestDir(PathBuf);

impl TestDir {
    pub fn new(label: &str) -> TestDir {
        TestDir::under(&std::env::temp_dir(), label)
    }

    /// A directory on a memory file system where there is one (`/dev/shm`): for tests that
    /// open and sync a store hundreds of times, where disk fsync latency would dominate.
    pub fn in_memory(label: &str) -> TestDir {
        let shm = Path::new("/dev/shm");
        if shm.is_dir() {
            TestDir::under(shm, label)
        } else {
            TestDir::new(label)
        }
    }

    fn under(base: &Path, label: &str) -> TestDir {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let dir = base.join(format!("bernstein-{label}-{}-{n}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        TestDir(dir)
    }

    pub fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for TestDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}
