//! The XML of OAI-PMH answers: the envelope every answer shares, the parts
//! the verbs put in it, and the `oai_dc` element of a Dublin Core record
//! (which `/rights/{lccId}/metadata` serves too). Written as text with every
//! value escaped; the shapes follow the protocol's schema (OAI-PMH.xsd).

use read_model::calendar::Timestamp;
use read_model::documents::DublinCoreRecord;

use super::arguments::Arguments;
use super::{OAI_DC, OaiError};

/// Text escaped for XML content and attribute values.
pub fn escape_xml(text: &str) -> String {
    let mut escaped = String::with_capacity(text.len());
    for character in text.chars() {
        match character {
            '&' => escaped.push_str("&amp;"),
            '<' => escaped.push_str("&lt;"),
            '>' => escaped.push_str("&gt;"),
            '"' => escaped.push_str("&quot;"),
            '\'' => escaped.push_str("&apos;"),
            other => escaped.push(other),
        }
    }
    escaped
}

/// The `oai_dc:dc` element of a record, as OAI-PMH embeds it in `metadata`.
pub fn oai_dc_element(record: &DublinCoreRecord) -> String {
    let mut xml = String::from(
        "<oai_dc:dc xmlns:oai_dc=\"http://www.openarchives.org/OAI/2.0/oai_dc/\" \
         xmlns:dc=\"http://purl.org/dc/elements/1.1/\" xmlns:xsi=\"http://www.w3.org/2001/XMLSchema-instance\" \
         xsi:schemaLocation=\"http://www.openarchives.org/OAI/2.0/oai_dc/ http://www.openarchives.org/OAI/2.0/oai_dc.xsd\">\n",
    );
    for (element, values) in record.elements() {
        for value in values {
            xml.push_str(&format!("  <dc:{element}>{}</dc:{element}>\n", escape_xml(value)));
        }
    }
    xml.push_str("</oai_dc:dc>\n");
    xml
}

/// A datestamp at the repository's granularity, seconds: `YYYY-MM-DDThh:mm:ssZ`.
pub fn datestamp(unix_ms: i64) -> String {
    let text = Timestamp(unix_ms).to_string();
    format!("{}Z", &text[..text.len().saturating_sub(5)])
}

/// The answer to a request: the envelope around `body`, the verb's element.
pub fn answer(base_url: &str, arguments: &Arguments, body: &str) -> String {
    envelope(base_url, Some(arguments), body)
}

/// The answer to a request that failed with a protocol error.
pub fn error(base_url: &str, arguments: &Arguments, error: &OaiError) -> String {
    let shown = (!error.hides_arguments()).then_some(arguments);
    let body = format!("<error code=\"{}\">{}</error>", error.code, escape_xml(&error.message));
    envelope(base_url, shown, &body)
}

fn envelope(base_url: &str, arguments: Option<&Arguments>, body: &str) -> String {
    let attributes: String = arguments
        .into_iter()
        .flatten()
        .map(|(name, value)| format!(" {}=\"{}\"", escape_xml(name), escape_xml(value)))
        .collect();
    format!(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n\
         <OAI-PMH xmlns=\"http://www.openarchives.org/OAI/2.0/\" xmlns:xsi=\"http://www.w3.org/2001/XMLSchema-instance\" \
         xsi:schemaLocation=\"http://www.openarchives.org/OAI/2.0/ http://www.openarchives.org/OAI/2.0/OAI-PMH.xsd\">\n\
         <responseDate>{}</responseDate>\n<request{attributes}>{}</request>\n{body}\n</OAI-PMH>\n",
        datestamp(Timestamp::now().0),
        escape_xml(base_url),
    )
}

/// `Identify`'s element.
pub fn identify(base_url: &str, admin_email: &str, earliest_ms: i64, repository_identifier: &str) -> String {
    format!(
        "<Identify>\n<repositoryName>LCC rights registry: published works</repositoryName>\n\
         <baseURL>{}</baseURL>\n<protocolVersion>2.0</protocolVersion>\n<adminEmail>{}</adminEmail>\n\
         <earliestDatestamp>{}</earliestDatestamp>\n<deletedRecord>transient</deletedRecord>\n\
         <granularity>YYYY-MM-DDThh:mm:ssZ</granularity>\n\
         <description><oai-identifier xmlns=\"http://www.openarchives.org/OAI/2.0/oai-identifier\" \
         xmlns:xsi=\"http://www.w3.org/2001/XMLSchema-instance\" \
         xsi:schemaLocation=\"http://www.openarchives.org/OAI/2.0/oai-identifier http://www.openarchives.org/OAI/2.0/oai-identifier.xsd\">\
         <scheme>oai</scheme><repositoryIdentifier>{}</repositoryIdentifier><delimiter>:</delimiter>\
         <sampleIdentifier>oai:{}:LCC-0000000001</sampleIdentifier></oai-identifier></description>\n</Identify>",
        escape_xml(base_url),
        escape_xml(admin_email),
        datestamp(earliest_ms),
        escape_xml(repository_identifier),
        escape_xml(repository_identifier),
    )
}

/// `ListMetadataFormats`'s element: `oai_dc` alone.
pub fn metadata_formats() -> String {
    format!(
        "<ListMetadataFormats>\n<metadataFormat><metadataPrefix>{OAI_DC}</metadataPrefix>\
         <schema>http://www.openarchives.org/OAI/2.0/oai_dc.xsd</schema>\
         <metadataNamespace>http://www.openarchives.org/OAI/2.0/oai_dc/</metadataNamespace></metadataFormat>\n\
         </ListMetadataFormats>"
    )
}

/// A record's header.
pub fn header(identifier: &str, changed_at_ms: i64, deleted: bool) -> String {
    let status = if deleted { " status=\"deleted\"" } else { "" };
    format!(
        "<header{status}><identifier>{}</identifier><datestamp>{}</datestamp></header>",
        escape_xml(identifier),
        datestamp(changed_at_ms)
    )
}

/// A record: its header and, unless deleted, its `oai_dc` metadata.
pub fn record(header: &str, metadata: Option<&str>) -> String {
    match metadata {
        Some(metadata) => format!("<record>{header}\n<metadata>\n{metadata}</metadata>\n</record>"),
        None => format!("<record>{header}</record>"),
    }
}

/// The resumption token element of a list page: the token when more follow,
/// empty on the last page of a resumed list, absent on a list of one page.
pub fn resumption_token(token: Option<&str>, resumed: bool) -> String {
    match token {
        Some(token) => format!("<resumptionToken>{}</resumptionToken>", escape_xml(token)),
        None if resumed => "<resumptionToken/>".to_owned(),
        None => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn datestamps_are_to_the_second() {
        assert_eq!(datestamp(1_764_012_190_512), "2025-11-24T19:23:10Z");
    }

    #[test]
    fn errors_that_concern_the_arguments_do_not_echo_them() {
        let arguments = vec![("verb".to_owned(), "Nope".to_owned()), ("x".to_owned(), "<&>".to_owned())];
        let bad_verb = error("http://h/oai", &arguments, &OaiError::new("badVerb", "no <verb>"));
        assert!(bad_verb.contains("<request>http://h/oai</request>"), "{bad_verb}");
        assert!(bad_verb.contains("<error code=\"badVerb\">no &lt;verb&gt;</error>"));
        let missing = error("http://h/oai", &arguments, &OaiError::new("idDoesNotExist", "none"));
        assert!(missing.contains("<request verb=\"Nope\" x=\"&lt;&amp;&gt;\">"), "{missing}");
    }
}
