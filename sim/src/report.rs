//! Race reports: everything needed to reproduce one failing seed, as JSON
//! with a format version. The trace is the authority (it replays even if the
//! generator changes); the seed and configuration say where it came from.

use courier_check::Property;
use courier_core::Input;
use serde::{Deserialize, Serialize};

use crate::swarm::Swarm;

/// The report format this build writes and reads. Bump it when the meaning
/// of a field changes, including the generator's stream for a seed.
pub const REPORT_FORMAT: u64 = 1;

/// One failing seed.
#[derive(Clone, PartialEq, Eq, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Report {
    /// Always [`REPORT_FORMAT`] when written by this build.
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
    pub output_hash: String,
    /// Every input fed, up to and including the violating one.
    pub trace: Vec<Input>,
}

/// Why a file is not a report this build can replay.
#[derive(Debug, thiserror::Error)]
pub enum ReportError {
    /// Not JSON, or not shaped like a report.
    #[error("not a race report: {0}")]
    Malformed(String),
    /// A report of another format version.
    #[error("race report format {found}, but this build reads format {REPORT_FORMAT}")]
    Version {
        /// The version the file declares.
        found: u64,
    },
}

impl Report {
    /// Parses a report, checking the format version before the shape so a
    /// report from another version says so instead of failing on a field.
    pub fn parse(text: &str) -> Result<Report, ReportError> {
        let value: serde_json::Value = serde_json::from_str(text)
            .map_err(|error| ReportError::Malformed(error.to_string()))?;
        let found = value
            .get("format")
            .ok_or_else(|| ReportError::Malformed("no `format` field".to_owned()))?
            .as_u64()
            .ok_or_else(|| ReportError::Malformed("`format` is not a number".to_owned()))?;
        if found != REPORT_FORMAT {
            return Err(ReportError::Version { found });
        }
        serde_json::from_value(value).map_err(|error| ReportError::Malformed(error.to_string()))
    }

    /// The report as pretty JSON with a final newline.
    pub fn to_json(&self) -> String {
        let mut text = serde_json::to_string_pretty(self).expect("a report serializes");
        text.push('\n');
        text
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

    fn report() -> Report {
        Report {
            format: REPORT_FORMAT,
            seed: 7,
            mutant: Some("no-latch".to_owned()),
            swarm: Swarm::draw(&mut Prng::new(7)),
            property: Property::NoLostWakeup,
            detail: "retired with 1 owed: A".to_owned(),
            output_hash: "fnv1a64:0123456789abcdef".to_owned(),
            trace: vec![
                Input::followup(Message::text("A", Source::user())),
                Input::WhenIdle,
            ],
        }
    }

    #[test]
    fn a_report_round_trips() {
        let report = report();
        assert_eq!(Report::parse(&report.to_json()).expect("parses"), report);
        assert!(
            report
                .to_json()
                .contains("\"property\": \"no-lost-wakeup\"")
        );
    }

    #[test]
    fn another_version_or_shape_is_refused_with_a_reason() {
        let json = report().to_json();
        let future = json.replace("\"format\": 1", "\"format\": 2");
        assert!(matches!(
            Report::parse(&future),
            Err(ReportError::Version { found: 2 })
        ));
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
