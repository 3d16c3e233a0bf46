//! Entity extraction data: spans of a text (character offsets, end exclusive, as Python slices them),
//! the tag schemes files write them in (BIO, BIOES), and the two ways between spans and the tags of a
//! model's tokens — aligning gold spans to WordPiece tokens for training, and reading predicted tags
//! back as spans of the original text. The model always learns BIO over the entity types (`O`, `B-T`,
//! `I-T`, …: the label names transformers' token classifiers use); files may be BIO or BIOES.

pub use contracts::data::{bio_labels, EntitySpan};

use crate::tokenizer::Piece;

/// The place of a tag in an entity.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Position {
    Outside,
    Begin,
    Inside,
    End,
    Single,
}

/// One tag as a file writes it: `O`, or a position and a type (`B-PER`, `I-LOC`, `E-ORG`, `S-PER`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tag {
    pub position: Position,
    pub kind: String,
}

impl Tag {
    /// Reads `O`, `B-X`, `I-X`, `E-X`, `S-X` (also `M-X` for inside and `B_X`, as some Chinese corpora
    /// write them); `None` for anything else.
    pub fn parse(tag: &str) -> Option<Tag> {
        let tag = tag.trim();
        if tag == "O" {
            return Some(Tag {
                position: Position::Outside,
                kind: String::new(),
            });
        }
        let (prefix, kind) = tag.split_at_checked(1)?;
        let kind = kind.strip_prefix(['-', '_'])?;
        if kind.is_empty() || kind.chars().any(|c| c.is_whitespace() || c.is_control()) {
            return None;
        }
        let position = match prefix {
            "B" => Position::Begin,
            "I" | "M" => Position::Inside,
            "E" => Position::End,
            "S" => Position::Single,
            _ => return None,
        };
        Some(Tag {
            position,
            kind: kind.to_string(),
        })
    }
}

/// The entities tagged by `tags` over items `0..tags.len()`, as `(first, last + 1, type)`, read the way
/// seqeval's default mode reads BIO and BIOES: an entity starts at `B`/`S`, or at an `I`/`E` whose
/// type differs from the entity before (or that follows `O`); it ends at `E`/`S`, before `O`, `B`, `S`
/// or another type. Also returns the items where an entity started without a `B`/`S`, for warnings.
pub fn spans_of_tags(tags: &[Tag]) -> (Vec<(usize, usize, String)>, Vec<usize>) {
    let mut spans = Vec::new();
    let mut unopened = Vec::new();
    let mut open: Option<(usize, String)> = None;
    let mut close = |open: &mut Option<(usize, String)>, end: usize| {
        if let Some((start, kind)) = open.take() {
            spans.push((start, end, kind));
        }
    };
    for (i, tag) in tags.iter().enumerate() {
        match tag.position {
            Position::Outside => close(&mut open, i),
            Position::Begin | Position::Single => {
                close(&mut open, i);
                open = Some((i, tag.kind.clone()));
                if tag.position == Position::Single {
                    close(&mut open, i + 1);
                }
            }
            Position::Inside | Position::End => {
                if open.as_ref().is_none_or(|(_, k)| *k != tag.kind) {
                    close(&mut open, i);
                    unopened.push(i);
                    open = Some((i, tag.kind.clone()));
                }
                if tag.position == Position::End {
                    close(&mut open, i + 1);
                }
            }
        }
    }
    close(&mut open, tags.len());
    (spans, unopened)
}

/// The entity types of BIO label names (every `B-T`), in label order.
pub fn types_of_labels(labels: &[String]) -> Vec<String> {
    labels
        .iter()
        .filter_map(|l| l.strip_prefix("B-").map(str::to_string))
        .collect()
}

/// The byte offset of each character boundary of `text`: `offsets[i]` is where character `i` starts,
/// and `offsets[len]` is `text.len()`.
fn char_starts(text: &str) -> Vec<usize> {
    text.char_indices()
        .map(|(b, _)| b)
        .chain(std::iter::once(text.len()))
        .collect()
}

/// The gold tag id of each token of `text` for `spans` (character offsets) under the BIO `labels`:
/// `B-T` on the first piece of the first word of an entity, `I-T` on the first piece of its other words,
/// `O` on the first piece of a word outside entities, and [`IGNORED`](super::batch::IGNORED) on
/// `[CLS]`/`[SEP]` and on a word's other pieces (transformers' token-classification recipe). A token
/// that straddles an entity's edge takes the entity's tag.
pub fn tag_tokens(
    text: &str,
    spans: &[EntitySpan],
    pieces: &[Option<Piece>],
    labels: &[String],
) -> Vec<i64> {
    let ignored = super::batch::IGNORED;
    let bytes = char_starts(text);
    let byte_span = |s: &EntitySpan| {
        let at = |c: usize| bytes.get(c).copied().unwrap_or(text.len());
        (at(s.start), at(s.end))
    };
    let id = |name: &str| {
        labels
            .iter()
            .position(|l| l == name)
            .map_or(ignored, |i| i as i64)
    };
    let mut seen_in: Vec<bool> = vec![false; spans.len()];
    pieces
        .iter()
        .map(|piece| {
            let Some(p) = piece else { return ignored };
            if p.continues {
                return ignored;
            }
            match spans.iter().enumerate().find(|(_, s)| {
                let (start, end) = byte_span(s);
                p.start < end && p.end > start
            }) {
                None => id("O"),
                Some((k, s)) => {
                    let first = !std::mem::replace(&mut seen_in[k], true);
                    id(&format!("{}-{}", if first { "B" } else { "I" }, s.label))
                }
            }
        })
        .collect()
}

/// The entities a model tagged: `tags[i]` is the predicted label id of token `i` (ignored for the
/// special tokens and for a word's later pieces, which follow their word), read as BIO over `labels`
/// and turned into character spans of `text`, each with the mean probability of its tokens' tags
/// when `scores` gives one per token.
pub fn entities_of_tokens(
    text: &str,
    tags: &[usize],
    scores: Option<&[f32]>,
    pieces: &[Option<Piece>],
    labels: &[String],
) -> Vec<(EntitySpan, f32)> {
    // Each word: its first token's index, its byte extent (later pieces included).
    let mut words: Vec<(usize, usize, usize)> = Vec::new();
    for (i, piece) in pieces.iter().enumerate() {
        match piece {
            None => {}
            Some(p) if p.continues && !words.is_empty() => {
                let last = words.len() - 1;
                words[last].2 = words[last].2.max(p.end);
            }
            Some(p) => words.push((i, p.start, p.end)),
        }
    }
    let word_tags: Vec<Tag> = words
        .iter()
        .map(|&(i, _, _)| {
            tags.get(i)
                .and_then(|&t| labels.get(t))
                .and_then(|l| Tag::parse(l))
                .unwrap_or(Tag {
                    position: Position::Outside,
                    kind: String::new(),
                })
        })
        .collect();
    let to_char = |byte: usize| text[..byte.min(text.len())].chars().count();
    spans_of_tags(&word_tags)
        .0
        .into_iter()
        .map(|(first, last, kind)| {
            let (start, end) = (words[first].1, words[last - 1].2);
            let score = scores.map_or(1.0, |s| {
                let picked: Vec<f32> = words[first..last]
                    .iter()
                    .filter_map(|&(i, _, _)| s.get(i).copied())
                    .collect();
                picked.iter().sum::<f32>() / picked.len().max(1) as f32
            });
            (
                EntitySpan {
                    start: to_char(start),
                    end: to_char(end),
                    label: kind,
                },
                score,
            )
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tags(s: &str) -> Vec<Tag> {
        s.split_whitespace()
            .map(|t| Tag::parse(t).unwrap())
            .collect()
    }

    #[test]
    fn tags_parse_in_the_schemes_files_use() {
        assert_eq!(Tag::parse("B-PER").unwrap().position, Position::Begin);
        assert_eq!(Tag::parse("M_LOC").unwrap().kind, "LOC");
        assert_eq!(Tag::parse("S-ORG").unwrap().position, Position::Single);
        for bad in ["", "B", "B-", "X-PER", "BPER", "o", "B-P ER"] {
            assert_eq!(Tag::parse(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn spans_are_read_as_seqeval_reads_bio_and_bioes() {
        let (spans, unopened) = spans_of_tags(&tags("B-PER I-PER O B-LOC B-LOC I-LOC O"));
        assert_eq!(
            spans,
            [
                (0, 2, "PER".into()),
                (3, 4, "LOC".into()),
                (4, 6, "LOC".into())
            ]
        );
        assert!(unopened.is_empty());
        let (spans, _) = spans_of_tags(&tags("S-PER B-ORG M-ORG E-ORG O S-LOC"));
        assert_eq!(
            spans,
            [
                (0, 1, "PER".into()),
                (1, 4, "ORG".into()),
                (5, 6, "LOC".into())
            ]
        );
        // An I without its B starts an entity (and is reported); a type change splits one.
        let (spans, unopened) = spans_of_tags(&tags("O I-PER I-PER I-LOC"));
        assert_eq!(spans, [(1, 3, "PER".into()), (3, 4, "LOC".into())]);
        assert_eq!(unopened, [1, 3]);
    }

    fn piece(start: usize, end: usize, continues: bool) -> Option<Piece> {
        Some(Piece {
            start,
            end,
            continues,
        })
    }

    #[test]
    fn gold_spans_go_on_first_pieces_and_come_back_as_the_same_spans() {
        // "张三在Paddock工作": 张 三 在 pad ##dock 工 作, bytes 0..3..6..9..12..16..19..22.
        let text = "张三在Paddock工作";
        let pieces = [
            None,
            piece(0, 3, false),
            piece(3, 6, false),
            piece(6, 9, false),
            piece(9, 12, false),
            piece(12, 16, true),
            piece(16, 19, false),
            piece(19, 22, false),
            None,
        ];
        let labels = bio_labels(&["ORG".into(), "PER".into()]);
        assert_eq!(labels, ["O", "B-ORG", "I-ORG", "B-PER", "I-PER"]);
        let gold = [
            EntitySpan {
                start: 0,
                end: 2,
                label: "PER".into(),
            },
            EntitySpan {
                start: 3,
                end: 10,
                label: "ORG".into(),
            },
        ];
        let tagged = tag_tokens(text, &gold, &pieces, &labels);
        assert_eq!(tagged, [-100, 3, 4, 0, 1, -100, 0, 0, -100]);
        let predicted: Vec<usize> = tagged.iter().map(|&t| t.max(0) as usize).collect();
        let back: Vec<EntitySpan> = entities_of_tokens(text, &predicted, None, &pieces, &labels)
            .into_iter()
            .map(|(e, _)| e)
            .collect();
        assert_eq!(back, gold);
    }
}
