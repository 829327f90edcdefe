//! Test helpers shared by the CLI test crates.

use std::path::Path;

/// The fake OpenAI-compatible upstream (`tests/python/fake_openai.py`), killed when dropped.
pub struct FakeUpstream {
    child: std::process::Child,
    /// Its base URL (`http://127.0.0.1:PORT/v1`).
    pub url: String,
}

impl FakeUpstream {
    /// Starts it, writing its port file in `dir`; `None`, saying the test skips, when python3
    /// cannot start it.
    pub fn start(dir: &Path) -> Option<FakeUpstream> {
        let started = Self::spawn(dir);
        if started.is_none() {
            eprintln!("skipped: python3 is not available to run the fake upstream");
        }
        started
    }

    fn spawn(dir: &Path) -> Option<FakeUpstream> {
        let port_file = dir.join("fake.port");
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/python/fake_openai.py");
        let child = std::process::Command::new("python3")
            .arg(script)
            .arg(&port_file)
            .spawn()
            .ok()?;
        for _ in 0..100 {
            if let Ok(p) = std::fs::read_to_string(&port_file)
                && !p.is_empty()
            {
                return Some(FakeUpstream {
                    child,
                    url: format!("http://127.0.0.1:{p}/v1"),
                });
            }
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
        None
    }
}

impl Drop for FakeUpstream {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
