"""posenc.lab: the C++ lab's random streams bit for bit, its model at initialisation, and a few
training steps that lower the loss with every encoding (the trained tables receive gradients)."""

import math

import pytest
import torch

import posenc.lab as lab
from posenc.lab.model import ENCODERS, LMConfig, SplitMix64, TinyLM, Trainer


def test_splitmix64_reference_values():
    g = SplitMix64(0)
    # splitmix64 (Steele, Lea, Flood 2014) from state 0: the published first outputs
    assert [g.next() for _ in range(3)] == [0xE220A8397B1DCDAF, 0x6E789E6AA1B965F4, 0x06C45D188009454F]
    g = SplitMix64(1)
    u = g.uniform()
    assert 0 <= u < 1 and u == (SplitMix64(1).next() >> 11) * 2.0 ** -53


def test_corpus_split_as_the_cpp_lab():
    data, path = lab.read_corpus("")
    train, held = lab.run.split(data)
    assert len(train) + len(held) == len(data)
    assert bytes(held[:4096].to(torch.uint8).tolist()) == data[9 * 4096:10 * 4096]


@pytest.mark.parametrize("name", ENCODERS)
def test_a_few_steps_lower_the_loss(name):
    torch.manual_seed(0)
    c = LMConfig(steps=12, warmup=2, lr=1e-2)
    m = TinyLM(c, name, 16)
    data, _ = lab.read_corpus("")
    train, _ = lab.run.split(data)
    seq = torch.stack([train[i * 100:i * 100 + 17] for i in range(4)])
    t = Trainer(m, c)
    first = float(m(seq))
    assert abs(first - math.log(256)) < 0.5  # the output layer starts near uniform
    for _ in range(12):
        t.step(lambda: m(seq))
    assert float(m(seq)) < first - 0.3
    if name == "t5":
        assert m.t5.weight.grad.abs().sum() > 0
    if name == "learned":
        assert m.pos.weight.grad.abs().sum() > 0


def test_options_are_checked():
    with pytest.raises(ValueError, match="unknown encoder 'bogus'"):
        lab.run_lab(lab.LabOptions(encoders=["bogus"]))
    with pytest.raises(ValueError, match="add rope"):
        lab.run_lab(lab.LabOptions(encoders=["alibi"], rope_scalings=["rope-pi"]))
