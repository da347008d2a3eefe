"""GPT's paper: the model card's paragraph (what the variant changes and why) and the
citation, read through ``SPEC.paper``. Data only."""

from ...registry import VariantInfo

PAPER = VariantInfo(
    "GPT",
    "GPT is a decoder-only Transformer pretrained as a left-to-right language model: masked (causal) "
    "self-attention, learned absolute positions, GELU feed-forward layers and an output layer tied to "
    "the token embeddings. GPT-1 (post-LayerNorm, 512 positions) is fine-tuned with task inputs "
    "delimited by [START]/[DELIM]/[EXTRACT] tokens and an auxiliary language-modelling loss; GPT-2 moves "
    "the LayerNorm to each sub-block's input, adds a final LayerNorm, scales the residual projections' "
    "initialisation by 1/sqrt(2 * layers) and uses 1024 positions and a byte-level BPE vocabulary.",
    "Language Models are Unsupervised Multitask Learners",
    "https://cdn.openai.com/better-language-models/language_models_are_unsupervised_multitask_learners.pdf",
    """@techreport{radford2019language,
  title = {Language Models are Unsupervised Multitask Learners},
  author = {Radford, Alec and Wu, Jeffrey and Child, Rewon and Luan, David and Amodei, Dario and Sutskever, Ilya},
  institution = {OpenAI},
  year = {2019}
}
@techreport{radford2018improving,
  title = {Improving Language Understanding by Generative Pre-Training},
  author = {Radford, Alec and Narasimhan, Karthik and Salimans, Tim and Sutskever, Ilya},
  institution = {OpenAI},
  year = {2018}
}""",
)
