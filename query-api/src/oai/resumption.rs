//! The resumption token: where a list harvest continues in the change feed
//! (a cursor of the feed) and the end of its selection. Opaque to
//! harvesters; checked to be of the harvest's audience.

use read_model::change_feed::FeedCursor;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResumptionToken {
    pub cursor: FeedCursor,
    /// The last sequence the harvest selects, if it has an `until`.
    pub until_sequence: Option<i64>,
}

impl ResumptionToken {
    /// `<cursor>~<until sequence>`, or the cursor alone.
    pub fn encode(&self) -> String {
        match self.until_sequence {
            Some(until) => format!("{}~{until}", self.cursor.encode()),
            None => self.cursor.encode(),
        }
    }

    pub fn decode(text: &str) -> Option<ResumptionToken> {
        let (cursor, until_sequence) = match text.split_once('~') {
            Some((cursor, until)) => (cursor, Some(until.parse().ok()?)),
            None => (text, None),
        };
        Some(ResumptionToken { cursor: FeedCursor::decode(cursor).ok()?, until_sequence })
    }
}

#[cfg(test)]
mod tests {
    use read_model::change_feed::FeedPosition;
    use read_model::{Audience, ModelVersion};

    use super::*;

    #[test]
    fn tokens_round_trip_with_and_without_an_end() {
        let cursor = FeedCursor {
            model_version: ModelVersion(2),
            audience: Audience::Production,
            position: FeedPosition { sequence: 99, lcc_id: "LCC-1".into() },
        };
        for until_sequence in [None, Some(12_345)] {
            let token = ResumptionToken { cursor: cursor.clone(), until_sequence };
            assert_eq!(ResumptionToken::decode(&token.encode()), Some(token));
        }
        assert_eq!(ResumptionToken::decode("c1.AA~x"), None);
    }
}
