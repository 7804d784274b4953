//! A request's arguments, checked as the protocol requires: one verb, each
//! argument at most once, only the arguments the verb takes, its required
//! ones present, a resumption token alone, dates of one granularity.

use read_model::calendar::{Date, Timestamp};

use super::resumption::ResumptionToken;
use super::{OAI_DC, OaiError};

/// What a request asks, once its arguments are checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verb {
    Identify,
    ListMetadataFormats { identifier: Option<String> },
    ListSets,
    GetRecord { identifier: String },
    List { records: bool, selection: Selection },
}

/// Which records a list asks for: from the start of a harvest, or where a
/// token left off.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Selection {
    New {
        /// Milliseconds since the epoch, inclusive.
        from_ms: Option<i64>,
        until_ms: Option<i64>,
    },
    Resumed(ResumptionToken),
}

/// The arguments as given, with repeats kept.
pub type Arguments = Vec<(String, String)>;

/// Parses a query string or form body.
pub fn parse(encoded: &[u8]) -> Arguments {
    form_urlencoded::parse(encoded).map(|(name, value)| (name.into_owned(), value.into_owned())).collect()
}

/// The verb and its arguments, or the error the protocol names.
pub fn verb(arguments: &Arguments) -> Result<Verb, OaiError> {
    for (index, (name, _)) in arguments.iter().enumerate() {
        if arguments[..index].iter().any(|(earlier, _)| earlier == name) {
            let code = if name == "verb" { "badVerb" } else { "badArgument" };
            return Err(OaiError::new(code, format!("the argument {name} is given more than once")));
        }
    }
    let get = |name: &str| arguments.iter().find(|(given, _)| given == name).map(|(_, value)| value.as_str());
    let verb = get("verb").ok_or_else(|| OaiError::new("badVerb", "the verb argument is missing"))?;
    let allowed: &[&str] = match verb {
        "Identify" | "ListSets" => &[],
        "ListMetadataFormats" => &["identifier"],
        "GetRecord" => &["identifier", "metadataPrefix"],
        "ListIdentifiers" | "ListRecords" => &["metadataPrefix", "from", "until", "set", "resumptionToken"],
        other => return Err(OaiError::new("badVerb", format!("{other} is not an OAI-PMH verb"))),
    };
    if let Some((name, _)) = arguments.iter().find(|(name, _)| name != "verb" && !allowed.contains(&name.as_str())) {
        return Err(OaiError::new("badArgument", format!("{verb} does not take the argument {name}")));
    }
    match verb {
        "Identify" => Ok(Verb::Identify),
        "ListSets" => Ok(Verb::ListSets),
        "ListMetadataFormats" => Ok(Verb::ListMetadataFormats { identifier: get("identifier").map(str::to_owned) }),
        "GetRecord" => {
            let identifier = get("identifier").ok_or_else(|| missing(verb, "identifier"))?;
            metadata_prefix(get("metadataPrefix").ok_or_else(|| missing(verb, "metadataPrefix"))?)?;
            Ok(Verb::GetRecord { identifier: identifier.to_owned() })
        }
        _ => {
            let records = verb == "ListRecords";
            if let Some(token) = get("resumptionToken") {
                if arguments.len() > 2 {
                    return Err(OaiError::new("badArgument", "resumptionToken is an exclusive argument"));
                }
                let token = ResumptionToken::decode(token).ok_or_else(|| {
                    OaiError::new("badResumptionToken", "the resumption token is not one this repository issued")
                })?;
                return Ok(Verb::List { records, selection: Selection::Resumed(token) });
            }
            metadata_prefix(get("metadataPrefix").ok_or_else(|| missing(verb, "metadataPrefix"))?)?;
            if get("set").is_some() {
                return Err(OaiError::new("noSetHierarchy", "this repository does not support sets"));
            }
            let from = get("from").map(|text| datestamp(text, false)).transpose()?;
            let until = get("until").map(|text| datestamp(text, true)).transpose()?;
            if let (Some((from, from_fine)), Some((until, until_fine))) = (from, until) {
                if from_fine != until_fine {
                    return Err(OaiError::new("badArgument", "from and until must have the same granularity"));
                }
                if from > until {
                    return Err(OaiError::new("badArgument", "from is later than until"));
                }
            }
            let selection = Selection::New { from_ms: from.map(|(ms, _)| ms), until_ms: until.map(|(ms, _)| ms) };
            Ok(Verb::List { records, selection })
        }
    }
}

fn missing(verb: &str, name: &str) -> OaiError {
    OaiError::new("badArgument", format!("{verb} requires the argument {name}"))
}

fn metadata_prefix(prefix: &str) -> Result<(), OaiError> {
    if prefix == OAI_DC {
        Ok(())
    } else {
        Err(OaiError::new("cannotDisseminateFormat", format!("{prefix} is not served; oai_dc is")))
    }
}

/// A `from` or `until` value as milliseconds, and whether it was given to
/// the second. An `until` covers the whole day or second it names.
fn datestamp(text: &str, until: bool) -> Result<(i64, bool), OaiError> {
    let bad = || {
        OaiError::new("badArgument", format!("{text} is not a date (YYYY-MM-DD) or a UTC time (YYYY-MM-DDThh:mm:ssZ)"))
    };
    if text.len() == 10 {
        let day = Date::parse(text).ok_or_else(bad)?;
        let start = i64::from(day.0) * 86_400_000;
        return Ok((if until { start + 86_399_999 } else { start }, false));
    }
    let seconds = text.strip_suffix('Z').filter(|rest| rest.len() == 19).ok_or_else(bad)?;
    let instant = Timestamp::parse(&format!("{seconds}.000Z")).ok_or_else(bad)?;
    Ok((if until { instant.0 + 999 } else { instant.0 }, true))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn verb_of(query: &str) -> Result<Verb, OaiError> {
        verb(&parse(query.as_bytes()))
    }

    fn code_of(query: &str) -> &'static str {
        verb_of(query).expect_err(query).code
    }

    #[test]
    fn every_verb_reads_its_arguments() {
        assert_eq!(verb_of("verb=Identify"), Ok(Verb::Identify));
        assert_eq!(verb_of("verb=ListSets"), Ok(Verb::ListSets));
        assert_eq!(verb_of("verb=ListMetadataFormats"), Ok(Verb::ListMetadataFormats { identifier: None }));
        assert_eq!(
            verb_of("verb=GetRecord&identifier=oai%3Ax%3ALCC-1&metadataPrefix=oai_dc"),
            Ok(Verb::GetRecord { identifier: "oai:x:LCC-1".into() })
        );
        let Ok(Verb::List { records: true, selection: Selection::New { from_ms, until_ms } }) =
            verb_of("verb=ListRecords&metadataPrefix=oai_dc&from=2026-01-02&until=2026-01-02")
        else {
            panic!("a list")
        };
        assert_eq!(until_ms.zip(from_ms).map(|(until, from)| until - from), Some(86_399_999), "until covers its day");
        let Ok(Verb::List { records: false, selection: Selection::New { from_ms, .. } }) =
            verb_of("verb=ListIdentifiers&metadataPrefix=oai_dc&from=2026-01-02T03:04:05Z")
        else {
            panic!("a list")
        };
        assert_eq!(from_ms, Timestamp::parse("2026-01-02T03:04:05.000Z").map(|instant| instant.0));
    }

    #[test]
    fn the_protocols_errors_are_named_precisely() {
        assert_eq!(code_of(""), "badVerb");
        assert_eq!(code_of("verb=Harvest"), "badVerb");
        assert_eq!(code_of("verb=Identify&verb=Identify"), "badVerb");
        assert_eq!(code_of("verb=Identify&identifier=x"), "badArgument");
        assert_eq!(code_of("verb=GetRecord&identifier=x"), "badArgument");
        assert_eq!(code_of("verb=GetRecord&identifier=x&metadataPrefix=marc21"), "cannotDisseminateFormat");
        assert_eq!(code_of("verb=ListRecords"), "badArgument");
        assert_eq!(code_of("verb=ListRecords&metadataPrefix=oai_dc&from=2026-13-01"), "badArgument");
        assert_eq!(
            code_of("verb=ListRecords&metadataPrefix=oai_dc&from=2026-01-01&until=2026-01-01T00:00:00Z"),
            "badArgument"
        );
        assert_eq!(code_of("verb=ListRecords&metadataPrefix=oai_dc&from=2026-02-01&until=2026-01-01"), "badArgument");
        assert_eq!(code_of("verb=ListRecords&metadataPrefix=oai_dc&set=music"), "noSetHierarchy");
        assert_eq!(code_of("verb=ListRecords&resumptionToken=nonsense"), "badResumptionToken");
        assert_eq!(code_of("verb=ListRecords&resumptionToken=x&metadataPrefix=oai_dc"), "badArgument");
        assert_eq!(code_of("verb=ListRecords&metadataPrefix=oai_dc&metadataPrefix=oai_dc"), "badArgument");
    }
}
