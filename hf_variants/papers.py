"""The papers behind the variants: the card paragraph (what the variant changes and why) and the
citation, one constant per paper. A variant's spec (``models/<variant>/__init__.py``) names its
paper; the model card reads it from there. Data only: nothing here imports the package.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class VariantInfo:
    display_name: str
    description: str  # one paragraph: what the variant changes and why
    paper_title: str
    paper_url: str
    bibtex: str


BERT = VariantInfo(
        "BERT",
        "BERT is a bidirectional Transformer encoder pretrained with masked language modelling (15% of "
        "WordPiece tokens selected; 80% replaced by [MASK], 10% by a random token, 10% kept) and next-sentence "
        "prediction, using learned absolute position embeddings, segment embeddings and post-LayerNorm blocks. "
        "It is fine-tuned end to end with a small task head on the [CLS] or token representations.",
        "BERT: Pre-training of Deep Bidirectional Transformers for Language Understanding",
        "https://arxiv.org/abs/1810.04805",
        """@inproceedings{devlin-etal-2019-bert,
  title = {{BERT}: Pre-training of Deep Bidirectional Transformers for Language Understanding},
  author = {Devlin, Jacob and Chang, Ming-Wei and Lee, Kenton and Toutanova, Kristina},
  booktitle = {Proceedings of NAACL-HLT 2019},
  pages = {4171--4186},
  year = {2019},
  url = {https://aclanthology.org/N19-1423}
}""",
    
)

ROBERTA = VariantInfo(
        "RoBERTa",
        "RoBERTa keeps BERT's architecture but changes how it is pretrained: dynamic masking (a new mask each "
        "time a sequence is seen), no next-sentence prediction, full-length sequences packed across document "
        "boundaries, much larger batches and more data, and a byte-level BPE vocabulary.",
        "RoBERTa: A Robustly Optimized BERT Pretraining Approach",
        "https://arxiv.org/abs/1907.11692",
        """@article{liu2019roberta,
  title = {{RoBERTa}: A Robustly Optimized {BERT} Pretraining Approach},
  author = {Liu, Yinhan and Ott, Myle and Goyal, Naman and Du, Jingfei and Joshi, Mandar and Chen, Danqi
            and Levy, Omer and Lewis, Mike and Zettlemoyer, Luke and Stoyanov, Veselin},
  journal = {arXiv preprint arXiv:1907.11692},
  year = {2019}
}""",
    
)

SPANBERT = VariantInfo(
        "SpanBERT",
        "SpanBERT masks contiguous spans instead of single tokens (span lengths drawn from a clipped geometric "
        "distribution, p = 0.2, max 10, whole words, 15% of tokens in total) and adds the span-boundary "
        "objective (SBO): each masked token is predicted from the encodings of the two tokens just outside "
        "its span plus a relative position embedding. It drops next-sentence prediction and trains on single "
        "contiguous segments.",
        "SpanBERT: Improving Pre-training by Representing and Predicting Spans",
        "https://arxiv.org/abs/1907.10529",
        """@article{joshi-etal-2020-spanbert,
  title = {{SpanBERT}: Improving Pre-training by Representing and Predicting Spans},
  author = {Joshi, Mandar and Chen, Danqi and Liu, Yinhan and Weld, Daniel S. and Zettlemoyer, Luke
            and Levy, Omer},
  journal = {Transactions of the Association for Computational Linguistics},
  volume = {8},
  pages = {64--77},
  year = {2020},
  url = {https://aclanthology.org/2020.tacl-1.5}
}""",
    
)

ALBERT = VariantInfo(
        "ALBERT",
        "ALBERT reduces BERT's parameter count with a factorized embedding (vocabulary projected through a "
        "small dimension E before the hidden size H) and by sharing one set of layer parameters across all "
        "layers. It replaces next-sentence prediction with sentence-order prediction (SOP) and uses n-gram "
        "masking for the MLM objective.",
        "ALBERT: A Lite BERT for Self-supervised Learning of Language Representations",
        "https://arxiv.org/abs/1909.11942",
        """@inproceedings{lan2020albert,
  title = {{ALBERT}: A Lite {BERT} for Self-supervised Learning of Language Representations},
  author = {Lan, Zhenzhong and Chen, Mingda and Goodman, Sebastian and Gimpel, Kevin and Sharma, Piyush
            and Soricut, Radu},
  booktitle = {International Conference on Learning Representations (ICLR)},
  year = {2020},
  url = {https://openreview.net/forum?id=H1eA7AEtvS}
}""",
    
)

ELECTRA = VariantInfo(
        "ELECTRA",
        "ELECTRA pretrains with replaced-token detection: a small masked-language-model generator fills in "
        "masked positions, and the discriminator (the model kept for fine-tuning) classifies every token as "
        "original or replaced. Learning from all tokens rather than the 15% masked ones makes it far more "
        "compute-efficient than MLM. Generator and discriminator share the token embeddings.",
        "ELECTRA: Pre-training Text Encoders as Discriminators Rather Than Generators",
        "https://arxiv.org/abs/2003.10555",
        """@inproceedings{clark2020electra,
  title = {{ELECTRA}: Pre-training Text Encoders as Discriminators Rather Than Generators},
  author = {Clark, Kevin and Luong, Minh-Thang and Le, Quoc V. and Manning, Christopher D.},
  booktitle = {International Conference on Learning Representations (ICLR)},
  year = {2020},
  url = {https://openreview.net/forum?id=r1xMH1BtvB}
}""",
    
)

TRANSFO_XL = VariantInfo(
        "Transformer-XL",
        "Transformer-XL is a causal language model that reuses the hidden states of the previous segment as "
        "a memory every layer attends to (segment-level recurrence, no gradient into the memory), with relative "
        "positional encodings so that positions stay coherent across segments; its dependency length grows "
        "with depth beyond the training segment.",
        "Transformer-XL: Attentive Language Models Beyond a Fixed-Length Context",
        "https://arxiv.org/abs/1901.02860",
        """@inproceedings{dai2019transformerxl,
  title = {Transformer-{XL}: Attentive Language Models beyond a Fixed-Length Context},
  author = {Dai, Zihang and Yang, Zhilin and Yang, Yiming and Carbonell, Jaime and Le, Quoc and Salakhutdinov, Ruslan},
  booktitle = {Proceedings of the 57th Annual Meeting of the Association for Computational Linguistics},
  pages = {2978--2988},
  year = {2019}
}""",
)

XLNET = VariantInfo(
        "XLNet",
        "XLNet is a generalized autoregressive model: it maximizes the likelihood over random factorization "
        "orders of the sequence (permutation language modelling) using two-stream self-attention, so it sees "
        "bidirectional context without [MASK] tokens, and it borrows Transformer-XL's relative positional "
        "encodings and segment recurrence.",
        "XLNet: Generalized Autoregressive Pretraining for Language Understanding",
        "https://arxiv.org/abs/1906.08237",
        """@inproceedings{yang2019xlnet,
  title = {{XLNet}: Generalized Autoregressive Pretraining for Language Understanding},
  author = {Yang, Zhilin and Dai, Zihang and Yang, Yiming and Carbonell, Jaime and Salakhutdinov, Ruslan
            and Le, Quoc V.},
  booktitle = {Advances in Neural Information Processing Systems 32 (NeurIPS)},
  year = {2019}
}""",
    
)

T5 = VariantInfo(
        "T5",
        "T5 casts every task as text-to-text with an encoder-decoder Transformer that uses relative position "
        "buckets and pre-LayerNorm (RMS) blocks, pretrained with span corruption: random spans are replaced "
        "by sentinel tokens and the decoder generates the dropped spans.",
        "Exploring the Limits of Transfer Learning with a Unified Text-to-Text Transformer",
        "https://arxiv.org/abs/1910.10683",
        """@article{raffel2020t5,
  title = {Exploring the Limits of Transfer Learning with a Unified Text-to-Text Transformer},
  author = {Raffel, Colin and Shazeer, Noam and Roberts, Adam and Lee, Katherine and Narang, Sharan
            and Matena, Michael and Zhou, Yanqi and Li, Wei and Liu, Peter J.},
  journal = {Journal of Machine Learning Research},
  volume = {21},
  number = {140},
  pages = {1--67},
  year = {2020}
}""",
    
)

XLM = VariantInfo(
        "XLM",
        "XLM pretrains a cross-lingual encoder with causal or masked language modelling on monolingual text "
        "and translation language modelling (TLM) on parallel sentences, with language embeddings and a "
        "shared BPE vocabulary across languages.",
        "Cross-lingual Language Model Pretraining",
        "https://arxiv.org/abs/1901.07291",
        """@inproceedings{lample2019xlm,
  title = {Cross-lingual Language Model Pretraining},
  author = {Lample, Guillaume and Conneau, Alexis},
  booktitle = {Advances in Neural Information Processing Systems 32 (NeurIPS)},
  year = {2019}
}""",
    
)

VIT = VariantInfo(
        "ViT",
        "The Vision Transformer splits an image into fixed-size patches, embeds each patch linearly, prepends "
        "a [CLS] token, adds learned position embeddings and runs a standard pre-LayerNorm Transformer "
        "encoder; the [CLS] output feeds the classifier.",
        "An Image is Worth 16x16 Words: Transformers for Image Recognition at Scale",
        "https://arxiv.org/abs/2010.11929",
        """@inproceedings{dosovitskiy2021vit,
  title = {An Image is Worth 16x16 Words: Transformers for Image Recognition at Scale},
  author = {Dosovitskiy, Alexey and Beyer, Lucas and Kolesnikov, Alexander and Weissenborn, Dirk
            and Zhai, Xiaohua and Unterthiner, Thomas and Dehghani, Mostafa and Minderer, Matthias
            and Heigold, Georg and Gelly, Sylvain and Uszkoreit, Jakob and Houlsby, Neil},
  booktitle = {International Conference on Learning Representations (ICLR)},
  year = {2021},
  url = {https://openreview.net/forum?id=YicbFdNTTy}
}""",
    
)

GPT = VariantInfo(
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

TRANSFORMER = VariantInfo(
        "Transformer",
        "The Transformer is an encoder-decoder built from attention alone: six post-LayerNorm encoder layers "
        "(self-attention and a ReLU feed-forward layer) and six decoder layers that add masked self-attention "
        "and attention over the encoder's output, with fixed sinusoidal positions, one embedding matrix shared by "
        "source, target and output layer (scaled by sqrt(d_model)), label smoothing 0.1 and Adam with an "
        "inverse square-root learning-rate schedule after 4,000 warm-up steps.",
        "Attention Is All You Need",
        "https://arxiv.org/abs/1706.03762",
        """@inproceedings{vaswani2017attention,
  title = {Attention Is All You Need},
  author = {Vaswani, Ashish and Shazeer, Noam and Parmar, Niki and Uszkoreit, Jakob and Jones, Llion
            and Gomez, Aidan N. and Kaiser, {\\L}ukasz and Polosukhin, Illia},
  booktitle = {Advances in Neural Information Processing Systems 30 (NeurIPS)},
  pages = {5998--6008},
  year = {2017}
}""",
)
