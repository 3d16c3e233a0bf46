//! Paddle models (PaddleNLP ERNIE directories, issue 17): their weights file, `model_state.pdparams`,
//! is a pickle, read here without running it ([`pickle`]); their parameter names and Linear layouts
//! map onto the Hugging Face ones Paddock's model uses, and back ([`names`]).

pub mod names;
pub mod pickle;
