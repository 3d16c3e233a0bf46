//! Whole words for whole-word masking: jieba (`jieba-rs`, the Rust port of the segmenter Chinese
//! whole-word-masking models were trained with) splits a text into words, and every WordPiece token of
//! the text is assigned the word its first byte falls in. A `##` continuation always joins the word of
//! the token before it, so that the pieces of one WordPiece word are never split even where jieba cuts
//! inside it (`psp123`). Special tokens and `[UNK]` belong to no word: they are never masked.

use jieba_rs::Jieba;

use crate::{Result, Tokenizer};

/// One corpus row ready for masking.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WordTokens {
    /// `[CLS] … [SEP]`, exactly as `Tokenizer::encode` gives them (truncated to the run's length).
    pub input_ids: Vec<i64>,
    /// Per token: the index (0, 1, … in text order) of its word, or `None` when it cannot be masked.
    pub word_ids: Vec<Option<u32>>,
    /// Number of distinct words.
    pub words: usize,
}

/// jieba with its built-in dictionary; loading it takes a fraction of a second, so build one per run.
pub struct WordSegmenter {
    jieba: Jieba,
}

impl Default for WordSegmenter {
    fn default() -> Self {
        Self::new()
    }
}

impl WordSegmenter {
    pub fn new() -> Self {
        WordSegmenter {
            jieba: Jieba::new(),
        }
    }

    /// Byte ranges of the words of `text`, in order, covering it (jieba's accurate mode with HMM, so
    /// words missing from the dictionary are still found).
    pub fn spans(&self, text: &str) -> Vec<(usize, usize)> {
        let mut start = 0;
        self.jieba
            .cut(text, true)
            .into_iter()
            .map(|w| {
                let span = (start, start + w.len());
                start += w.len();
                span
            })
            .collect()
    }

    /// Tokenizes `text` to at most `max_len` tokens and groups the tokens into whole words.
    pub fn word_tokens(
        &self,
        tokenizer: &Tokenizer,
        text: &str,
        max_len: usize,
    ) -> Result<WordTokens> {
        let (encoded, offsets) = tokenizer.encode_with_offsets(text, max_len)?;
        let spans = self.spans(text);
        let unk = tokenizer.unk_id();
        let mut word_ids = Vec::with_capacity(encoded.input_ids.len());
        // (jieba word of the previous token, the dense id given to it)
        let mut last: Option<(usize, u32)> = None;
        let mut next_id = 0u32;
        for (i, (&id, offset)) in encoded.input_ids.iter().zip(&offsets).enumerate() {
            let Some((start, _)) = *offset else {
                word_ids.push(None);
                continue;
            };
            if id == unk {
                word_ids.push(None);
                continue;
            }
            let continuation = tokenizer
                .vocab()
                .get(id as usize)
                .is_some_and(|t| t.starts_with("##"));
            let jieba_word = spans.partition_point(|s| s.0 <= start).saturating_sub(1);
            let dense = match last {
                Some((_, prev))
                    if continuation
                        && word_ids.get(i.wrapping_sub(1)).copied().flatten().is_some() =>
                {
                    prev
                }
                Some((w, prev)) if w == jieba_word => prev,
                _ => {
                    next_id += 1;
                    next_id - 1
                }
            };
            last = Some((jieba_word, dense));
            word_ids.push(Some(dense));
        }
        Ok(WordTokens {
            input_ids: encoded.input_ids,
            word_ids,
            words: next_id as usize,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tokenizer() -> Tokenizer {
        let corpus = ["我们今天去北京天安门广场看升旗仪式", "psp123 很好玩"];
        Tokenizer::build_from_corpus(corpus.iter().copied(), 200).unwrap()
    }

    #[test]
    fn spans_cover_the_text_and_group_chinese_words() {
        let seg = WordSegmenter::new();
        let text = "我们今天去北京天安门";
        let spans = seg.spans(text);
        assert_eq!(spans.first().unwrap().0, 0);
        assert_eq!(spans.last().unwrap().1, text.len());
        let words: Vec<&str> = spans.iter().map(|&(a, b)| &text[a..b]).collect();
        assert!(
            words.contains(&"我们") && words.contains(&"今天"),
            "{words:?}"
        );
    }

    #[test]
    fn characters_of_one_word_share_an_id() {
        let seg = WordSegmenter::new();
        let t = tokenizer();
        let w = seg.word_tokens(&t, "我们今天去北京", 32).unwrap();
        // [CLS] 我 们 今 天 去 北 京 [SEP]
        assert_eq!(w.input_ids.len(), 9);
        assert_eq!(w.word_ids[0], None);
        assert_eq!(w.word_ids[8], None);
        assert_eq!(w.word_ids[1], w.word_ids[2], "我们 is one word");
        assert_eq!(w.word_ids[3], w.word_ids[4], "今天 is one word");
        assert_ne!(w.word_ids[2], w.word_ids[3]);
        assert_eq!(
            w.words,
            w.word_ids
                .iter()
                .flatten()
                .max()
                .map_or(0, |m| *m as usize + 1)
        );
    }

    #[test]
    fn wordpiece_continuations_stay_with_their_word_and_unknowns_are_not_words() {
        let seg = WordSegmenter::new();
        let t = tokenizer();
        let w = seg.word_tokens(&t, "psp123 很好 龘", 32).unwrap();
        let tokens: Vec<&str> = w
            .input_ids
            .iter()
            .map(|&i| t.vocab()[i as usize].as_str())
            .collect();
        for (i, tok) in tokens.iter().enumerate() {
            if tok.starts_with("##") {
                assert_eq!(w.word_ids[i], w.word_ids[i - 1], "{tokens:?}");
            }
        }
        let unk = w
            .input_ids
            .iter()
            .position(|&i| i == t.unk_id())
            .expect("龘 is not in the vocabulary");
        assert_eq!(w.word_ids[unk], None);
    }
}
