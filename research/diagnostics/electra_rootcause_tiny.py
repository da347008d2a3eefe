"""The tiny-scale experiment of docs/electra_rootcause.md (one thread, ~30-40 s per line of arguments):

    python -m research.diagnostics.electra_rootcause_tiny PRIOR STEPS LR [DISCRIMINATOR_WEIGHT [FINE_TUNE_STEPS]]

PRIOR 1/0: the joint model's RTD bias at the prior log-odds (the fix) or at 0 (the original's init).
Pretrains a tiny joint ELECTRA (V=300, H=64, 2 layers) for STEPS on Zipf token rows with RTD masking
(AdamW, clipping 1.0), prints the discriminator's per-layer token cosine, then fine-tunes a classifier
(does word 5 occur more often than word 6) from it with seeds 1-3 and from random weights (seed 1).
Results in docs/electra_rootcause/tiny_scale.json.
"""

import sys
import tempfile
import time

import torch
from torch.nn import functional as F
from transformers import AutoModelForPreTraining

import hf_variants
from hf_variants.models.electra.modeling_electra import ElectraForSequenceClassification

torch.set_num_threads(1)
prior = sys.argv[1] == "1"
steps = int(sys.argv[2])
lr = float(sys.argv[3])
weight = float(sys.argv[4]) if len(sys.argv) > 4 else 50.0
V, T, B = 300, 32, 16
cfg = hf_variants.named_config(
    "electra-mini",
    vocab_size=V,
    embedding_size=32,
    hidden_size=64,
    num_hidden_layers=2,
    num_attention_heads=2,
    intermediate_size=128,
    max_position_embeddings=64,
    generator_hidden_size=0.25,
    discriminator_prior_bias=prior,
    discriminator_weight=weight,
)
g = torch.Generator().manual_seed(0)
zipf = 1.0 / torch.arange(1, V - 4 + 1).float()


def rows(n):
    ids = torch.multinomial(zipf, n * (T - 2), replacement=True, generator=g).view(n, T - 2) + 4
    return torch.cat([torch.full((n, 1), 2), ids, torch.full((n, 1), 3)], 1)  # 2=[CLS], 3=[SEP], 1=[MASK]


torch.manual_seed(0)
model = AutoModelForPreTraining.from_config(cfg)
opt = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=0.01)
t0 = time.time()
for step in range(steps):
    ids = rows(B)
    labels = torch.full_like(ids, -100)
    sel = torch.rand(ids.shape, generator=g) < 0.15
    sel[:, 0] = sel[:, -1] = False
    labels[sel] = ids[sel]
    inp = ids.clone()
    inp[sel & (torch.rand(ids.shape, generator=g) < 0.85)] = 1
    out = model(input_ids=inp, attention_mask=torch.ones_like(ids), labels=labels)
    out.loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    opt.step()
    opt.zero_grad()
model.eval()
with torch.no_grad():

    def cosof(h):
        x = F.normalize(h.reshape(-1, h.shape[-1]), dim=-1)
        s = x @ x.T
        return float((s.sum() - s.diagonal().sum()) / (s.numel() - s.shape[0]))

    hs = model.electra(rows(32), output_hidden_states=True, return_dict=True).hidden_states
    cos = cosof(hs[-1])
    E = model.electra.embeddings.word_embeddings.weight[4:60]
    print(
        "  per-layer token cosine",
        [round(cosof(h), 3) for h in hs],
        "word-emb cosine (frequent 56)",
        round(cosof(E), 3),
        "first-token cos",
        round(cosof(hs[-1][:, 0]), 3),
    )
print(
    f"prior={prior} pretrain {steps} steps lr {lr}: rtd loss {float(out.discriminator_loss):.3f} bias {float(model.discriminator_predictions.dense_prediction.bias):.3f} token cosine {cos:.3f} ({time.time() - t0:.1f}s)"
)
checkpoint = tempfile.mkdtemp()
model.save_pretrained(checkpoint)


# fine-tune: label = does token 5 occur more often than token 6
def task(n):
    ids = rows(n)
    y = ((ids == 5).sum(1) > (ids == 6).sum(1)).long()
    return ids, y


for pretrained, fseed in [(True, 1), (True, 2), (True, 3), (False, 1)]:
    torch.manual_seed(fseed)
    clf = (
        ElectraForSequenceClassification.from_pretrained(checkpoint, num_labels=2)
        if pretrained
        else ElectraForSequenceClassification(cfg.__class__(**{**cfg.to_dict(), "num_labels": 2}))
    )
    o = torch.optim.AdamW(clf.parameters(), lr=1e-3)
    losses = []
    for step in range(int(sys.argv[5]) if len(sys.argv) > 5 else 60):
        clf.train()
        ids, y = task(32)
        loss = clf(input_ids=ids, labels=y).loss
        loss.backward()
        o.step()
        o.zero_grad()
        losses.append(float(loss))
    clf.eval()
    ids, y = task(512)
    with torch.no_grad():
        acc = float((clf(input_ids=ids).logits.argmax(-1) == y).float().mean())
    print(
        f"  fine-tune {'pretrained' if pretrained else 'random'} seed {fseed}: loss first10 {sum(losses[:10]) / 10:.3f} last10 {sum(losses[-10:]) / 10:.3f} acc {acc:.3f} (positive rate = majority here {float(y.float().mean()):.3f}) {time.time() - t0:.1f}s"
    )
