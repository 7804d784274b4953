//! Content codings: which one a request accepts (`Accept-Encoding`), and
//! compressing a body with it. `conditional` applies them, since a
//! compressed representation needs its own entity tag.
//!
//! Only JSON and XML bodies of at least [`MINIMUM_BYTES`] are compressed;
//! snapshot files are already gzip or Snappy-compressed files and are sent
//! as they are. Levels favour speed: answers are compressed per request.

use std::io::Write as _;

use flate2::Compression;
use flate2::write::GzEncoder;

/// Bodies smaller than this gain less than the coding costs.
pub const MINIMUM_BYTES: usize = 1024;

/// The codings this service sends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Encoding {
    Gzip,
    Brotli,
    Zstd,
}

impl Encoding {
    /// The token of `Content-Encoding`, which also marks the entity tag.
    pub fn token(self) -> &'static str {
        match self {
            Encoding::Gzip => "gzip",
            Encoding::Brotli => "br",
            Encoding::Zstd => "zstd",
        }
    }

    /// `body` in this coding.
    pub fn compress(self, body: &[u8]) -> std::io::Result<Vec<u8>> {
        match self {
            Encoding::Gzip => {
                let mut encoder = GzEncoder::new(Vec::with_capacity(body.len() / 4), Compression::new(5));
                encoder.write_all(body)?;
                encoder.finish()
            }
            Encoding::Brotli => {
                let mut encoder = brotli::CompressorWriter::new(Vec::with_capacity(body.len() / 4), 4096, 4, 22);
                encoder.write_all(body)?;
                encoder.flush()?;
                Ok(encoder.into_inner())
            }
            Encoding::Zstd => zstd::bulk::compress(body, 3),
        }
    }
}

/// The coding to send for an `Accept-Encoding` value: the one with the
/// highest weight, and among equal weights zstd, then br, then gzip (the
/// fastest for the size). `None` for identity.
pub fn negotiate(accept_encoding: &str) -> Option<Encoding> {
    let mut best: Option<(u16, Encoding)> = None;
    let mut wildcard: Option<u16> = None;
    let mut named = Vec::new();
    for item in accept_encoding.split(',') {
        let mut parts = item.split(';');
        let token = parts.next().unwrap_or_default().trim().to_ascii_lowercase();
        let weight = parts
            .find_map(|parameter| {
                let (name, value) = parameter.split_once('=')?;
                (name.trim().eq_ignore_ascii_case("q")).then(|| weight_of(value.trim()))
            })
            .unwrap_or(Some(1000));
        let Some(weight) = weight else { continue };
        let encoding = match token.as_str() {
            "gzip" | "x-gzip" => Encoding::Gzip,
            "br" => Encoding::Brotli,
            "zstd" => Encoding::Zstd,
            "*" => {
                wildcard = Some(weight);
                continue;
            }
            _ => continue,
        };
        named.push(encoding);
        consider(&mut best, weight, encoding);
    }
    if let Some(weight) = wildcard {
        for encoding in [Encoding::Gzip, Encoding::Brotli, Encoding::Zstd] {
            if !named.contains(&encoding) {
                consider(&mut best, weight, encoding);
            }
        }
    }
    best.map(|(_, encoding)| encoding)
}

fn consider(best: &mut Option<(u16, Encoding)>, weight: u16, encoding: Encoding) {
    let rank = |encoding: Encoding| match encoding {
        Encoding::Zstd => 3,
        Encoding::Brotli => 2,
        Encoding::Gzip => 1,
    };
    if weight == 0 {
        return;
    }
    let better = best.is_none_or(|(best_weight, best_encoding)| {
        weight > best_weight || (weight == best_weight && rank(encoding) > rank(best_encoding))
    });
    if better {
        *best = Some((weight, encoding));
    }
}

/// A `q` value in thousandths; `None` when it is not one.
fn weight_of(text: &str) -> Option<u16> {
    let value: f64 = text.parse().ok()?;
    (0.0..=1.0).contains(&value).then(|| (value * 1000.0).round() as u16)
}

/// Whether a body of this content type is worth compressing.
pub fn is_compressible(content_type: &[u8]) -> bool {
    let text = String::from_utf8_lossy(content_type).to_ascii_lowercase();
    let media_type = text.split(';').next().unwrap_or_default().trim().to_owned();
    media_type == "application/json"
        || media_type.ends_with("+json")
        || media_type == "application/xml"
        || media_type == "text/xml"
        || media_type.ends_with("+xml")
}

#[cfg(test)]
mod tests {
    use std::io::Read as _;

    use super::*;

    #[test]
    fn the_heaviest_accepted_coding_wins_and_ties_go_to_the_fastest() {
        assert_eq!(negotiate("gzip, deflate, br, zstd"), Some(Encoding::Zstd));
        assert_eq!(negotiate("gzip, deflate, br"), Some(Encoding::Brotli));
        assert_eq!(negotiate("gzip;q=1.0, br;q=0.5"), Some(Encoding::Gzip));
        assert_eq!(negotiate("br;q=0, gzip"), Some(Encoding::Gzip));
        assert_eq!(negotiate("*"), Some(Encoding::Zstd));
        assert_eq!(negotiate("*;q=0.2, gzip;q=0.1"), Some(Encoding::Zstd));
        assert_eq!(negotiate("gzip;q=0, *;q=0"), None);
        assert_eq!(negotiate("identity"), None);
        assert_eq!(negotiate("deflate, compress"), None);
        assert_eq!(negotiate(""), None);
        assert_eq!(negotiate("gzip;q=2"), None, "a weight above 1 is not one");
    }

    #[test]
    fn every_coding_gives_back_the_body() {
        let body = br#"{"items":[{"lccId":"LCC-0000000001","title":"A title"}]}"#.repeat(100);
        let gzip = Encoding::Gzip.compress(&body).expect("gzip");
        let mut decoded = Vec::new();
        flate2::read::GzDecoder::new(&gzip[..]).read_to_end(&mut decoded).expect("gunzip");
        assert_eq!(decoded, body);
        let brotli = Encoding::Brotli.compress(&body).expect("br");
        let mut decoded = Vec::new();
        brotli::Decompressor::new(&brotli[..], 4096).read_to_end(&mut decoded).expect("unbrotli");
        assert_eq!(decoded, body);
        let zstd = Encoding::Zstd.compress(&body).expect("zstd");
        assert_eq!(zstd::bulk::decompress(&zstd, body.len()).expect("unzstd"), body);
        assert!(gzip.len() < body.len() / 10 && brotli.len() < body.len() / 10 && zstd.len() < body.len() / 10);
    }

    #[test]
    fn json_and_xml_are_compressed_and_files_are_not() {
        for compressible in
            ["application/json", "application/problem+json", "text/xml; charset=utf-8", "application/jwk-set+json"]
        {
            assert!(is_compressible(compressible.as_bytes()), "{compressible}");
        }
        for other in ["application/gzip", "application/vnd.apache.parquet", "text/html", ""] {
            assert!(!is_compressible(other.as_bytes()), "{other}");
        }
    }
}
