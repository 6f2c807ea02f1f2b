"""The ImageNet-C paper's subtype experiment as its reference trains: the reference's lists, a fresh
nn.Linear head, what is frozen for AlexNet, VGG and ResNet, the frozen layers' mode, the schedule."""

from __future__ import annotations

import json
import math
from types import SimpleNamespace

import pytest
import torch
import torchvision
from torch import nn

from robustlab.data.subtypes import SUBTYPE_CLASSES, reference_lists, reference_source, wordnet_lists
from robustlab.data.wordnet import ilsvrc_wnids
from robustlab.models import Classifier, Preprocessing
from robustlab.train.classes import class_mapping, resolve_class_subset
from robustlab.train.finetuning import FinetuneConfig
from robustlab.train.heads import resize_head_for, set_trainable
from robustlab.train.recipes import lr_factor
from shared_data import FIXTURES

REFERENCE = json.loads((FIXTURES / "subtypes" / "subtypes_reference_lists.json").read_text())


def test_the_shipped_lists_are_the_references():
    lists = reference_lists()
    assert [w for _, w in REFERENCE["types"]] == [w for _, w in SUBTYPE_CLASSES]
    for k, (raw_seen, raw_unseen) in enumerate(zip(REFERENCE["im1k_classes"], REFERENCE["im22k_classes"])):
        assert [w for w, t in lists.seen.items() if t == k] == list(dict.fromkeys(raw_seen))
        assert [w for w, t in lists.unseen.items() if t == k] == list(dict.fromkeys(raw_unseen))
    assert len(lists.seen) == 542 and len(lists.unseen) == 5017
    assert set(lists.seen) <= set(ilsvrc_wnids()) and not set(lists.unseen) & set(ilsvrc_wnids())
    assert "8190fe329f5f072a06e3a2aea02bb5dda69aed9f" in reference_source()


def test_training_labels_of_the_542_seen_subtypes_are_the_references_types():
    """Fine-tuning maps each ImageNet folder to its broad type through WordNet; for the reference's
    542 seen subtypes that is the reference's type, and the merganser it leaves out is not listed."""
    lists = reference_lists()
    folders = sorted(lists.seen)
    mapping = class_mapping(folders, resolve_class_subset("subtypes25"))
    assert {folders[i]: t for i, t in mapping.items()} == dict(lists.seen)
    derived = wordnet_lists(ilsvrc_wnids())
    assert set(derived.seen) - set(lists.seen) == {"n01855032"}  # red-breasted merganser: WordNet's, not the reference's


def test_subtypes25_takes_the_reference_recipe_and_options_override_it():
    cfg = FinetuneConfig(classes="subtypes25").resolved()
    assert cfg.recipe == "appendix-g"
    assert (cfg.epochs, cfg.batch_size, cfg.lr, cfg.momentum, cfg.weight_decay, cfg.nesterov) == (1, 128, 0.01, 0.9,
                                                                                                  5e-4, True)
    assert (cfg.train, cfg.head_init, cfg.frozen_mode, cfg.crop, cfg.schedule) == ("head", "fresh", "train",
                                                                                  "resize-random", "cosine-images")
    assert FinetuneConfig(classes="subtypes25", lr=0.1, head_init="imagenet-rows").resolved().lr == 0.1
    plain = FinetuneConfig(classes="vid30").resolved()
    assert plain.recipe == "default" and plain.batch_size == 32 and plain.head_init == "imagenet-rows"
    assert FinetuneConfig(recipe="appendix-g").resolved().train == "head"


def test_the_schedule_is_the_references_step_by_step():
    """train.py: after each step t += (pi / epochs) / (images / batch), lr = lr0 (1 + sin(pi/2 + min(t, pi - 0.01))) / 2."""
    images, batch, epochs = 1000, 128, 2
    factor = lr_factor("cosine-images", 16, batch_size=batch, images=images, epochs=epochs)
    t = 0.0
    for step in range(1, 17):
        t = min(t + (math.pi / epochs) / (images / batch), math.pi - 0.01)
        assert factor(step) == pytest.approx((1 + math.sin(math.pi / 2 + t)) / 2, abs=1e-12)
    assert factor(0) == 1.0 and factor(10_000) == pytest.approx((1 + math.cos(math.pi - 0.01)) / 2)


class ReferenceFineTune(nn.Module):
    """The reference's FineTuneModel (train.py), rewritten: what it trains and what it freezes."""

    def __init__(self, original: nn.Module, arch: str, num_classes: int) -> None:
        super().__init__()
        if arch.startswith(("alexnet", "vgg")):
            self.features = original.features
            self.fc = nn.Sequential(*list(original.classifier.children())[:-1])
            self.classifier = nn.Sequential(nn.Linear(4096, num_classes))
        else:
            self.features = nn.Sequential(*list(original.children())[:-1])
            self.classifier = nn.Sequential(nn.Linear(original.fc.in_features, num_classes))
        for p in self.features.parameters():
            p.requires_grad = False
        for p in getattr(self, "fc", nn.Sequential()).parameters():
            p.requires_grad = False


@pytest.mark.parametrize("arch", ["alexnet", "vgg11", "resnet18"])
def test_train_head_freezes_what_the_reference_freezes(arch):
    torch.manual_seed(0)
    ours = getattr(torchvision.models, arch)(weights=None)
    reference = ReferenceFineTune(getattr(torchvision.models, arch)(weights=None), arch, 25)
    model = Classifier(ours, name=arch, preprocessing=Preprocessing.imagenet(), num_classes=1000)
    data = SimpleNamespace(classes=tuple(f"type{k}" for k in range(25)), imagenet_rows={0: [1, 2]})
    old_rows = (ours.fc if arch == "resnet18" else ours.classifier[6]).weight.detach()[[1, 2]].mean(0)
    head = resize_head_for(model, data, True, seed=0, head_init="fresh")
    trained = set_trainable(model, head["path"], "head")
    assert head["init"] == "fresh" and head["path"] == ("fc" if arch == "resnet18" else "classifier.6")
    layer = model.net.get_submodule(head["path"])
    assert isinstance(layer, nn.Linear) and layer.out_features == 25
    assert layer.in_features == reference.classifier[0].in_features
    # the same parameters train: the new head's weight and bias, and nothing else
    ours_trainable = [tuple(p.shape) for p in model.net.parameters() if p.requires_grad]
    ref_trainable = [tuple(p.shape) for p in reference.parameters() if p.requires_grad]
    assert ours_trainable == ref_trainable == [(25, layer.in_features), (25,)]
    assert {id(p) for p in trained} == {id(layer.weight), id(layer.bias)}
    frozen = sum(p.numel() for p in model.net.parameters() if not p.requires_grad)
    assert frozen == sum(p.numel() for p in reference.parameters() if not p.requires_grad)
    # a fresh nn.Linear: PyTorch's default initialisation (kaiming uniform, a = sqrt(5): |w| <= 1/sqrt(fan_in))
    bound = 1 / math.sqrt(layer.in_features)
    assert layer.weight.abs().max() <= bound and layer.bias.abs().max() <= bound
    assert not torch.allclose(layer.weight[0], old_rows)  # not the mean-of-rows start (the option)


@pytest.mark.parametrize("mode", ["train", "eval"])
def test_frozen_layers_run_in_the_mode_the_recipe_names(tmp_path, mode):
    """appendix-g keeps the reference's net.train(): frozen weights stay, batch-norm statistics move;
    in eval mode they stay too."""
    from robustlab.models import load_model
    from robustlab.train import finetune

    from .conftest import TINY, make_folder

    data = make_folder(tmp_path / "data", ("n02085620", "n01641577"), 6)  # a dog and an amphibian
    before = load_model(f"python:{TINY}:make_tiny1000", device="cpu").net.state_dict()
    spec = finetune(f"python:{TINY}:make_tiny1000", data, out=tmp_path / "ft", classes="subtypes25", batch_size=4,
                    frozen_mode=mode, workers=0, progress=False)
    after = load_model(spec, device="cpu").net.state_dict()
    assert torch.equal(after["conv.weight"], before["conv.weight"]) and torch.equal(after["bn.weight"], before["bn.weight"])
    moved = not torch.equal(after["bn.running_mean"], before["bn.running_mean"])
    assert moved == (mode == "train")
    assert after["fc.weight"].shape == (25, before["fc.weight"].shape[1])
