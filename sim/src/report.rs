//! Race reports: everything needed to reproduce one failing seed, as JSON
//! with a format version. The trace is the authority (it replays even if the
//! generator changes); the seed and configuration say where it came from.

use courier_check::Property;
use std::io::{BufReader, Read};

use courier_core::{Stimulus, transcript};
use serde::{Deserialize, Serialize};

use crate::hash::OutputHash;
use crate::swarm::Swarm;

/// The report format this build writes. Bump it when the meaning of a
/// field changes, including the generator's stream for a seed. Format 2
/// added restarts (to the trace and the swarm).
pub const REPORT_FORMAT: u64 = 2;

/// The oldest format this build still reads: a format 1 trace holds only
/// inputs, which parse as [`Stimulus::Input`], and its swarm has no
/// restart rate, which reads as 0; so it replays as it did.
pub const REPORT_FORMAT_OLDEST: u64 = 1;

/// One failing seed.
#[derive(Clone, PartialEq, Eq, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Report {
    /// [`REPORT_FORMAT`] when written by this build; as read otherwise.
    pub format: u64,
    /// The seed that failed.
    pub seed: u64,
    /// The planted bug the run used (SPEC §8), or `null` for the correct core.
    pub mutant: Option<String>,
    /// The swarm configuration the seed drew.
    pub swarm: Swarm,
    /// The first property that broke.
    #[serde(with = "property_name")]
    pub property: Property,
    /// What was wrong, as the checker said it.
    pub detail: String,
    /// FNV-1a 64 of every line the run printed (see [`crate::OutputHash`]).
    pub output_hash: OutputHash,
    /// Every input and restart applied, up to and including the violating
    /// one.
    #[serde(deserialize_with = "trace::read")]
    pub trace: Vec<Stimulus>,
}

/// Why a file is not a report this build can replay.
#[derive(Debug, thiserror::Error)]
pub enum ReportError {
    /// Not JSON, or not shaped like a report.
    #[error("not a race report: {0}")]
    Malformed(String),
    /// A report of another format version.
    #[error(
        "race report format {found}, but this build reads formats \
         {REPORT_FORMAT_OLDEST} to {REPORT_FORMAT}"
    )]
    Version {
        /// The version the file declares.
        found: u64,
    },
    /// A stimulus that is not a transcript command (an id outside SPEC
    /// §10's alphabet, a space in a source, content other than its id's
    /// text: the line would name a different message).
    #[error(
        "trace[{index}] is not a transcript command: it prints as {line:?}, \
         which reads back as another stimulus or none (a command names a message by its id, matching \
         `[A-Za-z0-9][A-Za-z0-9_.-]*` (SPEC §10), and by its source's kind \
         alone; its content is one text block of its id, and it has no other field)"
    )]
    Stimulus {
        /// Its 0-based position in the trace.
        index: usize,
        /// The command line it prints as.
        line: String,
    },
}

/// The one field read before the rest: the format version (any JSON value,
/// so a wrong type is reported as such); every other field is skipped. A
/// report is an object: an array is not read as its fields in order.
struct Versioned {
    format: Option<serde_json::Value>,
}

impl<'de> Deserialize<'de> for Versioned {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Fields;
        impl<'de> serde::de::Visitor<'de> for Fields {
            type Value = Versioned;

            fn expecting(&self, formatter: &mut std::fmt::Formatter) -> std::fmt::Result {
                formatter.write_str("a race report (a JSON object)")
            }

            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                mut map: A,
            ) -> Result<Versioned, A::Error> {
                let mut format = None;
                while let Some(key) = map.next_key::<String>()? {
                    match key.as_str() {
                        "format" => format = Some(map.next_value()?),
                        _ => drop(map.next_value::<serde::de::IgnoredAny>()?),
                    }
                }
                Ok(Versioned { format })
            }
        }
        deserializer.deserialize_map(Fields)
    }
}

impl Report {
    /// Parses a report, checking the format version before the shape so a
    /// report from another version says so instead of failing on a field.
    pub fn parse(text: &str) -> Result<Report, ReportError> {
        Self::read(text.as_bytes(), text.as_bytes())
    }

    /// [`Report::parse`] over two readers of the same bytes, streamed: the
    /// first is read for the format version only (nothing else is kept), the
    /// second for the report. A report of a million stimuli never needs its
    /// text, or a JSON tree of it, in memory beside the trace.
    pub fn read(version: impl Read, whole: impl Read) -> Result<Report, ReportError> {
        let malformed = |error: serde_json::Error| ReportError::Malformed(error.to_string());
        let Versioned { format } =
            serde_json::from_reader(BufReader::new(version)).map_err(malformed)?;
        let found = format
            .ok_or_else(|| ReportError::Malformed("no `format` field".to_owned()))?
            .as_u64()
            .ok_or_else(|| ReportError::Malformed("`format` is not a whole number".to_owned()))?;
        if !(REPORT_FORMAT_OLDEST..=REPORT_FORMAT).contains(&found) {
            return Err(ReportError::Version { found });
        }
        let report: Report = serde_json::from_reader(BufReader::new(whole)).map_err(malformed)?;
        report.check_transcribable()?;
        report.check_format()?;
        Ok(report)
    }

    /// A format 1 trace holds only inputs (restarts came with format 2), so
    /// a restart there is not that version's: refused, as another version
    /// is, not replayed as something its writer never ran.
    fn check_format(&self) -> Result<(), ReportError> {
        if self.format >= 2 {
            return Ok(());
        }
        let restart = self
            .trace
            .iter()
            .position(|stimulus| matches!(stimulus, Stimulus::Restart { .. }));
        match restart {
            Some(index) => Err(ReportError::Malformed(format!(
                "a format 1 report holds only inputs, but trace[{index}] is a restart"
            ))),
            None => Ok(()),
        }
    }

    /// Every stimulus must print as a transcript command that reads back as
    /// itself (ids as SPEC §10 spells them, sources and causes without
    /// spaces), or `courier shrink` would write a transcript that does not
    /// parse, or that means something else.
    fn check_transcribable(&self) -> Result<(), ReportError> {
        for (index, stimulus) in self.trace.iter().enumerate() {
            transcript::check_transcribable(stimulus)
                .map_err(|bad| ReportError::Stimulus { index, line: bad.0 })?;
        }
        Ok(())
    }

    /// The report as pretty JSON with a final newline.
    pub fn to_json(&self) -> String {
        let mut text = serde_json::to_string_pretty(self).expect("a report serializes");
        text.push('\n');
        text
    }
}

/// A trace read one stimulus at a time, each refused naming its index and
/// what is wrong: serde's untagged [`Stimulus`] says only that nothing
/// matched, and ignores a key neither variant has (a restart beside an
/// input, a misspelt field), so the report would replay as something else.
mod trace {
    use std::fmt;

    use courier_core::{Input, Stimulus, UniqueJson, dropped_key};
    use serde::de::{Error, SeqAccess, Visitor};
    use serde::{Deserialize, Deserializer};
    use serde_json::Value;

    pub(super) fn read<'de, D: Deserializer<'de>>(
        deserializer: D,
    ) -> Result<Vec<Stimulus>, D::Error> {
        deserializer.deserialize_seq(Stimuli)
    }

    struct Stimuli;

    impl<'de> Visitor<'de> for Stimuli {
        type Value = Vec<Stimulus>;

        fn expecting(&self, formatter: &mut fmt::Formatter) -> fmt::Result {
            formatter.write_str("an array of inputs and restarts")
        }

        fn visit_seq<A: SeqAccess<'de>>(self, mut items: A) -> Result<Vec<Stimulus>, A::Error> {
            let mut trace = Vec::new();
            // A key given twice in a stimulus is refused, not one of its
            // values kept silently.
            let index = |trace: &Vec<Stimulus>, why: &dyn fmt::Display| {
                A::Error::custom(format!("trace[{}]: {why}", trace.len()))
            };
            while let Some(UniqueJson(item)) = items
                .next_element()
                .map_err(|error| index(&trace, &error))?
            {
                let stimulus = stimulus(&item).map_err(|why| index(&trace, &why))?;
                trace.push(stimulus);
            }
            Ok(trace)
        }
    }

    /// A key from the file as an error quotes it: escaped (a newline or an
    /// escape sequence must not act on the terminal) and at most 200
    /// characters.
    fn quoted(key: &str) -> String {
        let start: String = key.chars().take(200).collect();
        start.escape_debug().to_string()
    }

    /// A restart (`{"restart":{"lose":N}}`, nothing else) or an input
    /// (every key of which it keeps).
    fn stimulus(item: &Value) -> Result<Stimulus, String> {
        #[derive(Deserialize)]
        #[serde(deny_unknown_fields)]
        struct Restart {
            lose: usize,
        }
        match item {
            Value::Object(keys) if keys.contains_key("restart") => {
                if let Some(other) = keys.keys().find(|key| *key != "restart") {
                    let other = quoted(other);
                    return Err(format!(
                        "a restart holds `restart` alone, not `{other}` too"
                    ));
                }
                let Restart { lose } = Restart::deserialize(&keys["restart"])
                    .map_err(|error| format!("restart: {error}"))?;
                Ok(Stimulus::Restart { lose })
            }
            _ => {
                let input = Input::deserialize(item).map_err(|error| error.to_string())?;
                let read = serde_json::to_value(&input).map_err(|error| error.to_string())?;
                match dropped_key(item, &read) {
                    Some(key) => Err(format!("unknown key `{}`", quoted(&key))),
                    None => Ok(Stimulus::Input(input)),
                }
            }
        }
    }
}

/// Properties are written by their SPEC names.
mod property_name {
    use std::str::FromStr;

    use courier_check::Property;
    use serde::{Deserialize, Deserializer, Serializer};

    pub(super) fn serialize<S: Serializer>(
        property: &Property,
        serializer: S,
    ) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(property.name())
    }

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(
        deserializer: D,
    ) -> Result<Property, D::Error> {
        let name = String::deserialize(deserializer)?;
        Property::from_str(&name)
            .map_err(|_| serde::de::Error::custom(format!("unknown property `{name}`")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::prng::Prng;
    use courier_core::{Input, Message, Source};

    fn input(input: Input) -> Stimulus {
        Stimulus::Input(input)
    }

    fn report() -> Report {
        Report {
            format: REPORT_FORMAT,
            seed: 7,
            mutant: Some("no-latch".to_owned()),
            swarm: Swarm::draw(&mut Prng::new(7)),
            property: Property::NoLostWakeup,
            detail: "retired with 1 owed: A".to_owned(),
            output_hash: "fnv1a64:0123456789abcdef".parse().expect("a hash"),
            trace: vec![
                input(Input::followup(Message::text("A", Source::user()))),
                Stimulus::Restart { lose: 2 },
                input(Input::WhenIdle),
            ],
        }
    }

    #[test]
    fn a_report_whose_ids_are_not_transcript_ids_is_refused() {
        let mut bad = report();
        bad.trace.push(input(Input::followup(Message::text(
            "B\n----",
            Source::user(),
        ))));
        match Report::parse(&bad.to_json()) {
            Err(ReportError::Stimulus { index: 3, line }) => {
                assert_eq!(line, "followup B\n----");
            }
            other => panic!("{other:?}"),
        }
    }

    /// A stimulus that is not one is refused naming its index and what is
    /// wrong, and a key the trace would drop (a restart beside an input, a
    /// field no input has) is refused instead of replaying as something
    /// else. Before: "data did not match any variant of untagged enum
    /// Stimulus", and `{"input":"when-idle","restart":{"lose":1}}` replayed
    /// as a bare `when-idle`.
    #[test]
    fn a_bad_stimulus_is_refused_naming_its_index_and_what_is_wrong() {
        let good = report().to_json();
        let followup = r#"{
      "input": "when-idle"
    }"#;
        assert!(good.contains(followup), "{good}");
        for (stimulus, expected) in [
            (
                r#"{"input":"when-idle","restart":{"lose":1}}"#,
                "trace[2]: a restart holds `restart` alone, not `input` too",
            ),
            (
                r#"{"input":"when-idle","extra":1}"#,
                "trace[2]: unknown key `extra`",
            ),
            (
                r#"{"restart":{"lose":1,"x":1}}"#,
                "trace[2]: restart: unknown field `x`, expected `lose`",
            ),
            (
                r#"{"restart":{"lose":-1}}"#,
                "trace[2]: restart: invalid value: integer `-1`",
            ),
            (
                r#"{"input":"frobnicate"}"#,
                "trace[2]: unknown variant `frobnicate`",
            ),
            (
                r#"{"input":"cancel","cause":{"kind":"user","reason":"x\n"},"keep_inbox":false}"#,
                "trace[2]: unknown key `cause.reason`",
            ),
            // A key given twice: serde_json kept the last (`fail` replayed).
            (
                r#"{"input":"when-idle","input":"dispose"}"#,
                "trace[2]: duplicate key `input`",
            ),
            (
                r#"{"input":"cancel","cause":{"kind":"user","kind":"parent"},"keep_inbox":false}"#,
                "trace[2]: duplicate key `kind`",
            ),
        ] {
            let text = good.replacen(followup, stimulus, 1);
            match Report::parse(&text) {
                Err(ReportError::Malformed(why)) => {
                    assert!(why.starts_with(expected), "{stimulus}: {why}");
                }
                other => panic!("{stimulus}: {other:?}"),
            }
        }
    }

    #[test]
    fn a_report_round_trips() {
        let report = report();
        assert_eq!(Report::parse(&report.to_json()).expect("parses"), report);
        let json = report.to_json();
        assert!(json.contains("\"property\": \"no-lost-wakeup\""));
        assert!(
            json.contains("\"restart\": {\n        \"lose\": 2\n      }"),
            "{json}"
        );
    }

    /// A format 1 report (inputs only, no restart rate) still parses, as
    /// the same inputs with restarts off.
    #[test]
    fn a_format_1_report_reads_as_inputs_without_restarts() {
        let mut report = report();
        report
            .trace
            .retain(|stimulus| matches!(stimulus, Stimulus::Input(_)));
        report.swarm = report.swarm.without_restarts();
        let mut value = serde_json::to_value(&report).expect("serializes");
        value["format"] = 1.into();
        let swarm = value["swarm"].as_object_mut().expect("an object");
        assert!(swarm.remove("restart_percent").is_some());
        let old = Report::parse(&value.to_string()).expect("format 1 reads");
        assert_eq!(old.format, 1);
        assert_eq!(Report { format: 2, ..old }, report);
        // A restart in a format 1 trace is not that version's.
        value["trace"]
            .as_array_mut()
            .expect("a trace")
            .push(serde_json::json!({ "restart": { "lose": 1 } }));
        let error = Report::parse(&value.to_string()).expect_err("a restart in format 1");
        let index = report.trace.len();
        assert_eq!(
            error.to_string(),
            format!(
                "not a race report: a format 1 report holds only inputs, but trace[{index}] is a restart"
            )
        );
    }

    #[test]
    fn another_version_or_shape_is_refused_with_a_reason() {
        let json = report().to_json();
        let future = json.replace("\"format\": 2", "\"format\": 3");
        let error = Report::parse(&future).expect_err("a future format");
        assert!(matches!(error, ReportError::Version { found: 3 }));
        assert_eq!(
            error.to_string(),
            "race report format 3, but this build reads formats 1 to 2"
        );
        let unknown = json.replace("no-lost-wakeup", "no-such-property");
        let error = Report::parse(&unknown).expect_err("unknown property");
        assert!(error.to_string().contains("no-such-property"), "{error}");
        assert!(matches!(
            Report::parse("{}"),
            Err(ReportError::Malformed(_))
        ));
        assert!(matches!(
            Report::parse("not json"),
            Err(ReportError::Malformed(_))
        ));
    }
}
