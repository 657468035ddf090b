"""The GPU image, on this CPU machine: what it carries for CTranslate2 on CUDA (issue #31).

PyPI's torch brings CUDA 13; CTranslate2 4.x's CUDA build loads CUDA 12's cuBLAS by name. The image
carries NVIDIA's cuBLAS 12 wheel and registers it with ldconfig (deploy/image/Dockerfile.j2), so any
process of it, as any user, finds the libraries by name: checked here by loading them and importing
ctranslate2 as the service's user. That a GPU then translates is the GPU check's (`make gpu-check`).
"""

from __future__ import annotations

import pytest

from tests.image.images import Image, build_image, run_in_image

pytestmark = [pytest.mark.image, pytest.mark.slow]


@pytest.fixture(scope="module")
def gpu_image(tmp_path_factory: pytest.TempPathFactory) -> Image:
    return build_image("gpu", tmp_path_factory.mktemp("gpu-image-home"))


def test_the_gpu_image_is_tagged_for_the_gpu(gpu_image: Image) -> None:
    assert gpu_image.tag.endswith("-gpu"), gpu_image.tag


def test_cuda_12s_cublas_resolves_by_name_for_ctranslate2(gpu_image: Image) -> None:
    cache = run_in_image(gpu_image, "ldconfig -p")
    for name in ("libcublas.so.12", "libcublasLt.so.12"):
        assert name in cache, f"{name} is not in the image's loader cache"
    script = (
        "import ctypes, ctranslate2; "
        "[ctypes.CDLL(n) for n in ('libcublasLt.so.12', 'libcublas.so.12')]; "
        "print('ctranslate2', ctranslate2.__version__, 'cuda devices', ctranslate2.get_cuda_device_count())"
    )
    out = run_in_image(gpu_image, f'python -c "{script}"', user="bentoml")
    assert out.startswith("ctranslate2 ") and out.strip().endswith("cuda devices 0"), out


def test_the_gpu_image_keeps_cuda_torch(gpu_image: Image) -> None:
    out = run_in_image(gpu_image, "python -c 'import torch; print(torch.version.cuda)'", user="bentoml")
    assert out.strip() and out.strip() != "None", out
