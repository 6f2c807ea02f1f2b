"""Tiny, randomly initialised open_clip and transformers models built from configs (nothing is
downloaded), saved where the ``open_clip:`` and ``hf:`` sources read them, and their libraries' own
recipes to compare robustlab's predictions with."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import torch
from PIL import Image

#: An open_clip model config in open_clip's format: a 1-layer ViT and a 1-layer text transformer.
TINY_CLIP = {"embed_dim": 16,
             "vision_cfg": {"image_size": 32, "layers": 1, "width": 32, "patch_size": 16, "head_width": 16},
             "text_cfg": {"context_length": 77, "vocab_size": 49408, "width": 32, "heads": 2, "layers": 1}}


def tiny_open_clip(folder: Path, *, seed: int = 0, name: str = "tiny-clip", config: dict | None = None
                   ) -> tuple[Path, Path]:
    """``(config .json, checkpoint .pt)`` of a random open_clip model (open_clip.create_model, no weights)."""
    import open_clip

    folder.mkdir(parents=True, exist_ok=True)
    config_path = folder / f"{name}.json"
    config_path.write_text(json.dumps(config or TINY_CLIP))
    open_clip.add_model_config(config_path)
    torch.manual_seed(seed)
    model = open_clip.create_model(name, pretrained=None, pretrained_text=False)
    checkpoint = folder / f"{name}-{seed}.pt"
    torch.save(model.state_dict(), checkpoint)
    return config_path, checkpoint


def open_clip_recipe_logits(config: Path, checkpoint: Path, images: list[np.ndarray], names: list[str]) -> torch.Tensor:
    """open_clip's own zero-shot recipe: its eval transform on PIL images, its tokenizer, the per-class mean
    of the normalised template embeddings (build_zero_shot_classifier), 100 x cosine similarity."""
    import open_clip
    from open_clip.zero_shot_metadata import OPENAI_IMAGENET_TEMPLATES

    open_clip.add_model_config(config)
    model, _, preprocess = open_clip.create_model_and_transforms(config.stem, pretrained=str(checkpoint))
    model.eval()
    tokenizer = open_clip.get_tokenizer(config.stem)
    with torch.no_grad():
        weights = open_clip.build_zero_shot_classifier(model, tokenizer, names, OPENAI_IMAGENET_TEMPLATES)
        pixels = torch.stack([preprocess(Image.fromarray(img)) for img in images])
        features = model.encode_image(pixels, normalize=True)
    return 100.0 * features @ weights


def imagenet_id2label() -> dict[int, str]:
    """``id2label`` as ImageNet models on the Hub write it: the synset's lemmas, ``tench, Tinca tinca``."""
    from robustlab.models.label_space import imagenet_label_names

    return {i: f"{name}, lemma {i}" for i, name in enumerate(imagenet_label_names())}


def tiny_hf_vit(folder: Path, id2label: dict[int, str], *, seed: int = 0, processor: dict | None = None,
                **config) -> Path:
    """A random ViT image classifier and its image processor, written with save_pretrained."""
    from transformers import ViTConfig, ViTForImageClassification, ViTImageProcessor

    torch.manual_seed(seed)
    cfg = ViTConfig(image_size=32, patch_size=16, hidden_size=32, num_hidden_layers=1, num_attention_heads=2,
                    intermediate_size=64, num_labels=len(id2label), id2label=id2label,
                    label2id={v: k for k, v in id2label.items()}, **config)
    ViTForImageClassification(cfg).save_pretrained(folder)
    ViTImageProcessor(**(processor or {"size": {"height": 32, "width": 32}})).save_pretrained(folder)
    return folder


def hf_recipe_logits(folder: Path, images: list[np.ndarray]) -> torch.Tensor:
    """transformers' own recipe: the model and its own image processor, on PIL images."""
    from transformers import AutoImageProcessor, AutoModelForImageClassification

    processor = AutoImageProcessor.from_pretrained(folder)
    model = AutoModelForImageClassification.from_pretrained(folder).eval()
    with torch.no_grad():
        return torch.cat([model(**processor(images=Image.fromarray(img), return_tensors="pt")).logits
                          for img in images])


def robustlab_logits(model, images: list[np.ndarray]) -> torch.Tensor:
    """A robustlab classifier's logits on uint8 images, prepared as the engine's workers do."""
    with torch.no_grad():
        return torch.cat([model(torch.from_numpy(np.array(model.prepare_image(img))).permute(2, 0, 1)[None].float() / 255)
                          for img in images])


def offline_failure(monkeypatch, hub: Path, spec: str) -> str:
    """The message of loading ``spec`` with an empty Hub cache at ``hub`` and no network (a refused
    port), checked to come within seconds (not a minute of retries) as an OfflineError."""
    import time

    import pytest
    from huggingface_hub import constants

    from robustlab.errors import OfflineError
    from robustlab.models import load_model

    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(hub))
    monkeypatch.setenv("HF_ENDPOINT", "http://127.0.0.1:9")
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    start = time.perf_counter()
    with pytest.raises(OfflineError) as info:
        load_model(spec, device="cpu")
    assert time.perf_counter() - start < 10
    return str(info.value)


def photos(n: int, seed: int = 0) -> list[np.ndarray]:
    """``n`` uint8 images of assorted sizes (odd margins included) with structure, not only noise."""
    rng = np.random.default_rng(seed)
    out = []
    for k in range(n):
        h, w = int(rng.integers(33, 90)), int(rng.integers(33, 90))
        y, x = np.mgrid[0:h, 0:w]
        img = np.stack([(x * (k + 3)) % 255, (y * 7 + 40 * k) % 255, (x + y) * 2 % 255], -1).astype(float)
        out.append(np.clip(img + rng.normal(0, 20, img.shape), 0, 255).astype(np.uint8))
    return out
