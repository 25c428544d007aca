//! The few WebDriver calls the browser test needs, through `fantoccini`
//! (plain HTTP to chromedriver on localhost: no TLS feature, so no OpenSSL
//! or rustls in the build), behind a blocking facade so the tests stay
//! sequential. Every wait has a deadline, so a broken page fails the test
//! instead of hanging it.

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::thread::sleep;
use std::time::{Duration, Instant};

use fantoccini::{Client, ClientBuilder, Locator};
use hyper_util::client::legacy::connect::HttpConnector;
use serde_json::{Value, json};
use tokio::runtime::Runtime;

/// How long any one wait may take before the test fails.
pub(crate) const DEADLINE: Duration = Duration::from_secs(45);
/// How often a wait looks again.
const POLL: Duration = Duration::from_millis(100);

/// The flags every Chromium here starts with (the machine's closed network
/// refuses the background connections the last four would make).
pub(crate) const CHROMIUM_FLAGS: [&str; 7] = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
];

/// A child process killed when the test lets go of it, pass or fail.
pub(crate) struct Running(pub(crate) Child);

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// A port nobody listens on right now.
pub(crate) fn free_port() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.local_addr().unwrap().port()
}

/// Polls `probe` until it returns `Some`, failing after [`DEADLINE`].
pub(crate) fn wait_for<T>(what: &str, mut probe: impl FnMut() -> Option<T>) -> T {
    let start = Instant::now();
    loop {
        if let Some(found) = probe() {
            return found;
        }
        assert!(start.elapsed() < DEADLINE, "gave up waiting for {what}");
        sleep(POLL);
    }
}

/// A chromedriver process on a free port, and the runtime its sessions'
/// futures run on (one thread: the test waits on every call anyway).
pub(crate) struct Driver {
    _process: Running,
    url: String,
    runtime: Runtime,
}

impl Driver {
    /// Starts `chromedriver` and waits until it accepts connections.
    pub(crate) fn start(chromedriver: &Path) -> Driver {
        let port = free_port();
        let process = Command::new(chromedriver)
            .arg(format!("--port={port}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("chromedriver starts");
        let process = Running(process);
        wait_for("chromedriver to listen", || {
            std::net::TcpStream::connect(("127.0.0.1", port)).ok()
        });
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("a tokio runtime");
        Driver {
            _process: process,
            url: format!("http://127.0.0.1:{port}"),
            runtime,
        }
    }

    /// Opens a headless Chromium window with a fresh profile.
    pub(crate) fn session(&self, chromium: &Path, profile: &Path) -> Session<'_> {
        let mut args: Vec<String> = CHROMIUM_FLAGS.iter().map(|f| f.to_string()).collect();
        args.push(format!("--user-data-dir={}", profile.display()));
        args.push("--window-size=1400,1000".to_owned());
        let mut capabilities = serde_json::Map::new();
        capabilities.insert("browserName".to_owned(), json!("chrome"));
        capabilities.insert(
            "goog:chromeOptions".to_owned(),
            json!({"binary": chromium, "args": args}),
        );
        let client = self
            .runtime
            .block_on(
                ClientBuilder::new(HttpConnector::new())
                    .capabilities(capabilities)
                    .connect(&self.url),
            )
            .unwrap_or_else(|error| panic!("no browser session: {error}"));
        Session {
            runtime: &self.runtime,
            client,
        }
    }
}

/// One browser window, closed when dropped.
pub(crate) struct Session<'a> {
    runtime: &'a Runtime,
    client: Client,
}

impl Session<'_> {
    /// Loads `url` and waits for the document to finish loading.
    pub(crate) fn goto(&self, url: &str) {
        self.runtime
            .block_on(self.client.goto(url))
            .unwrap_or_else(|error| panic!("goto {url}: {error}"));
    }

    /// Runs `script` (a function body) in the page and returns its value.
    pub(crate) fn script(&self, script: &str) -> Value {
        self.runtime
            .block_on(self.client.execute(script, Vec::new()))
            .unwrap_or_else(|error| panic!("script {script:?}: {error}"))
    }

    /// Polls `script` until it returns something other than `null` or `false`.
    pub(crate) fn wait_for_script(&self, what: &str, script: &str) -> Value {
        wait_for(what, || {
            let value = self.script(script);
            (!value.is_null() && value != Value::Bool(false)).then_some(value)
        })
    }

    /// Waits for the element at `xpath` and clicks it.
    pub(crate) fn click(&self, xpath: &str) {
        let found = self.client.wait().at_most(DEADLINE).every(POLL);
        let element = self
            .runtime
            .block_on(found.for_element(Locator::XPath(xpath)))
            .unwrap_or_else(|error| panic!("gave up waiting for {xpath}: {error}"));
        self.runtime
            .block_on(element.click())
            .unwrap_or_else(|error| panic!("click {xpath}: {error}"));
    }

    /// Saves what the window shows as a PNG.
    pub(crate) fn screenshot(&self, file: &Path) {
        let png = self
            .runtime
            .block_on(self.client.screenshot())
            .unwrap_or_else(|error| panic!("screenshot: {error}"));
        std::fs::write(file, png).unwrap();
    }
}

impl Drop for Session<'_> {
    fn drop(&mut self) {
        // Closing may fail when the test already failed; chromedriver is
        // killed next either way.
        let _ = self.runtime.block_on(self.client.clone().close());
    }
}
