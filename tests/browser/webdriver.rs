//! The few WebDriver calls the browser test needs, as plain HTTP to
//! chromedriver on localhost (W3C WebDriver, JSON over HTTP). Every wait has
//! a deadline, so a broken page fails the test instead of hanging it.

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::thread::sleep;
use std::time::{Duration, Instant};

use base64::Engine as _;
use serde_json::{Value, json};

/// How long any one wait may take before the test fails.
pub(crate) const DEADLINE: Duration = Duration::from_secs(45);
/// The W3C key of an element reference.
const ELEMENT: &str = "element-6066-11e4-a52e-4f735466cecf";
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

fn http() -> ureq::Agent {
    ureq::Agent::new_with_config(
        ureq::Agent::config_builder()
            .http_status_as_error(false)
            .timeout_global(Some(DEADLINE))
            .build(),
    )
}

/// A chromedriver process on a free port.
pub(crate) struct Driver {
    _process: Running,
    url: String,
}

impl Driver {
    /// Starts `chromedriver` and waits until it reports ready.
    pub(crate) fn start(chromedriver: &Path) -> Driver {
        let port = free_port();
        let process = Command::new(chromedriver)
            .arg(format!("--port={port}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("chromedriver starts");
        let url = format!("http://127.0.0.1:{port}");
        let driver = Driver {
            _process: Running(process),
            url,
        };
        wait_for("chromedriver to be ready", || {
            let status = driver.call("GET", "/status", None).ok()?;
            status["ready"].as_bool().filter(|ready| *ready)
        });
        driver
    }

    fn call(&self, method: &str, path: &str, body: Option<Value>) -> Result<Value, String> {
        let url = format!("{}{path}", self.url);
        let agent = http();
        let response = match (method, body) {
            ("GET", _) => agent.get(&url).call(),
            ("DELETE", _) => agent.delete(&url).call(),
            (_, body) => agent
                .post(&url)
                .send_json(body.unwrap_or_else(|| json!({}))),
        };
        let mut response = response.map_err(|error| format!("{method} {path}: {error}"))?;
        let status = response.status();
        let reply: Value = response
            .body_mut()
            .read_json()
            .map_err(|error| format!("{method} {path}: {error}"))?;
        if status.is_success() {
            Ok(reply["value"].clone())
        } else {
            Err(format!("{method} {path}: {status}: {}", reply["value"]))
        }
    }

    /// Opens a headless Chromium window with a fresh profile.
    pub(crate) fn session(&self, chromium: &Path, profile: &Path) -> Session<'_> {
        let mut args: Vec<String> = CHROMIUM_FLAGS.iter().map(|f| f.to_string()).collect();
        args.push(format!("--user-data-dir={}", profile.display()));
        args.push("--window-size=1400,1000".to_owned());
        let capabilities = json!({"capabilities": {"alwaysMatch": {
            "browserName": "chrome",
            "goog:chromeOptions": {"binary": chromium, "args": args},
        }}});
        let created = self
            .call("POST", "/session", Some(capabilities))
            .unwrap_or_else(|error| panic!("no browser session: {error}"));
        let id = created["sessionId"].as_str().unwrap().to_owned();
        Session { driver: self, id }
    }
}

/// One browser window, closed when dropped.
pub(crate) struct Session<'a> {
    driver: &'a Driver,
    id: String,
}

impl Session<'_> {
    fn call(&self, method: &str, path: &str, body: Option<Value>) -> Value {
        let path = format!("/session/{}{path}", self.id);
        self.driver
            .call(method, &path, body)
            .unwrap_or_else(|error| panic!("{error}"))
    }

    /// Loads `url` and waits for the document to finish loading.
    pub(crate) fn goto(&self, url: &str) {
        self.call("POST", "/url", Some(json!({ "url": url })));
    }

    /// Runs `script` (a function body) in the page and returns its value.
    pub(crate) fn script(&self, script: &str) -> Value {
        self.call(
            "POST",
            "/execute/sync",
            Some(json!({"script": script, "args": []})),
        )
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
        let path = format!("/session/{}/element", self.id);
        let query = json!({"using": "xpath", "value": xpath});
        let element = wait_for(xpath, || {
            let found = self.driver.call("POST", &path, Some(query.clone())).ok()?;
            found[ELEMENT].as_str().map(str::to_owned)
        });
        self.call("POST", &format!("/element/{element}/click"), None);
    }

    /// Saves what the window shows as a PNG.
    pub(crate) fn screenshot(&self, file: &Path) {
        let encoded = self.call("GET", "/screenshot", None);
        let png = base64::engine::general_purpose::STANDARD
            .decode(encoded.as_str().unwrap())
            .unwrap();
        std::fs::write(file, png).unwrap();
    }
}

impl Drop for Session<'_> {
    fn drop(&mut self) {
        let path = format!("/session/{}", self.id);
        let _ = self.driver.call("DELETE", &path, None);
    }
}
