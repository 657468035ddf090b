"""Backend selection, the CPUs the engine may use, and the CTranslate2 conversion of a checkpoint."""

from __future__ import annotations

import json
import os
import shutil
import time

import pytest
from pydantic import ValidationError

from translator.config import Engine
from translator.engine.backends import AUTO, ConversionMissing, choose, is_converted, load_backend
from translator.engine.backends.base import Decoding, SpecialIds, cgroup_cpu_quota, cpu_allowance
from translator.engine.backends.ctranslate2_convert import check

pytestmark = pytest.mark.pure

DECODING = Decoding(num_beams=1, length_penalty=1.0, no_repeat_ngram_size=0)
SPECIAL = SpecialIds(decoder_start=2, eos=2, pad=1)


@pytest.mark.parametrize(
    ("engine", "cuda", "expected"),
    [
        (Engine(), False, ("ctranslate2", "cpu", "int8")),
        (Engine(), True, ("transformers", "cuda", "bfloat16")),
        (Engine(backend="transformers"), False, ("transformers", "cpu", "int8")),
        (Engine(backend="transformers", dtype="float32"), False, ("transformers", "cpu", "float32")),
        (Engine(backend="ctranslate2"), True, ("ctranslate2", "cuda", "float16")),
        (Engine(backend="ctranslate2", device="cuda:1"), False, ("ctranslate2", "cuda:1", "float16")),
        (Engine(dtype="int8_float16"), True, ("ctranslate2", "cuda", "int8_float16")),
        (Engine(dtype="int8", device="cuda"), True, ("ctranslate2", "cuda", "int8")),
        (Engine(dtype="float32"), False, ("ctranslate2", "cpu", "float32")),
    ],
)
def test_auto_is_resolved_per_device(engine, cuda, expected):
    assert choose(engine, cuda_available=cuda) == expected


@pytest.mark.model
def test_auto_runs_an_unconverted_checkpoint_on_transformers(fixture_model, converted_fixture_model):
    # A plain checkpoint directory given to the offline tools: auto is the fastest engine it can
    # run on; an explicit CTranslate2 asks for the conversion, which it names.
    assert choose(Engine(), cuda_available=False, model_dir=fixture_model) == ("transformers", "cpu", "int8")
    assert choose(Engine(), cuda_available=False, model_dir=converted_fixture_model) == ("ctranslate2", "cpu", "int8")
    with pytest.raises(ConversionMissing, match="ctranslate2_convert"):
        choose(Engine(dtype="int8_float16"), cuda_available=True, model_dir=fixture_model)
    with pytest.raises(ConversionMissing, match="ctranslate2_convert"):
        load_backend(fixture_model, Engine(backend="ctranslate2"), DECODING, SPECIAL, 128)


@pytest.mark.parametrize(
    ("engine", "message"),
    [
        (Engine(dtype="int8_float16"), "is for CUDA"),
        (Engine(backend="ctranslate2", dtype="float16"), "CTranslate2 on the CPU computes in float32 or int8"),
    ],
)
def test_what_no_engine_runs_on_the_device_found_is_refused_by_name(engine, message):
    # device: auto found no GPU: the settings' validator, which sees only "auto", cannot refuse these.
    with pytest.raises(ValueError, match=message):
        choose(engine, cuda_available=False)


def test_torchs_int8_is_refused_on_a_gpu_found_by_device_auto():
    with pytest.raises(ValueError, match="needs backend ctranslate2"):
        choose(Engine(backend="transformers", dtype="int8"), cuda_available=True)


def test_half_precision_on_the_cpu_runs_on_transformers():
    assert choose(Engine(dtype="bfloat16"), cuda_available=False) == ("transformers", "cpu", "bfloat16")


def test_the_auto_table_names_real_backends_and_precisions():
    for backend, dtype in AUTO.values():
        Engine(backend=backend, dtype=dtype)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        ({"backend": "transformers", "dtype": "int8_float16"}, "needs backend ctranslate2"),
        ({"backend": "transformers", "dtype": "int8", "device": "cuda"}, "runs on the CPU only"),
        ({"device": "cpu", "dtype": "int8_bfloat16"}, "is for CUDA"),
        ({"backend": "onnx"}, "Input should be 'auto', 'transformers', 'compiled', 'ctranslate2' or 'simulated'"),
    ],
)
def test_impossible_combinations_are_refused_by_the_settings(settings, message):
    with pytest.raises(ValidationError, match=message):
        Engine(**settings)


def test_cgroup_v2_quota_caps_the_threads(tmp_path, monkeypatch):
    (tmp_path / "cpu.max").write_text("150000 100000\n")
    assert cgroup_cpu_quota(tmp_path) == 1.5
    (tmp_path / "cpu.max").write_text("max 100000\n")
    assert cgroup_cpu_quota(tmp_path) is None


def test_cgroup_v1_quota(tmp_path):
    (tmp_path / "cpu").mkdir()
    (tmp_path / "cpu" / "cpu.cfs_quota_us").write_text("200000\n")
    (tmp_path / "cpu" / "cpu.cfs_period_us").write_text("100000\n")
    assert cgroup_cpu_quota(tmp_path) == 2.0
    (tmp_path / "cpu" / "cpu.cfs_quota_us").write_text("-1\n")
    assert cgroup_cpu_quota(tmp_path) is None
    assert cgroup_cpu_quota(tmp_path / "absent") is None


def test_cpu_allowance_is_the_smaller_of_affinity_and_quota(monkeypatch):
    import translator.engine.backends.base as base

    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: set(range(16)))
    monkeypatch.setattr(base, "cgroup_cpu_quota", lambda: 2.5)
    assert cpu_allowance() == 3
    monkeypatch.setattr(base, "cgroup_cpu_quota", lambda: 0.2)
    assert cpu_allowance() == 1
    monkeypatch.setattr(base, "cgroup_cpu_quota", lambda: None)
    assert cpu_allowance() == 16


@pytest.mark.model
def test_stock_converter_misses_the_language_tokens(fixture_model, tmp_path):
    # The trap the conversion works around (CTranslate2 4.8.5 with transformers 5). When this
    # starts passing, the workaround in translator/engine/backends/ctranslate2_convert.py can go.
    from ctranslate2.converters import TransformersConverter

    with pytest.raises(Exception, match="[Vv]ocabulary"):
        TransformersConverter(str(fixture_model)).convert(str(tmp_path / "stock"))


@pytest.mark.model
def test_conversion_keeps_the_checkpoints_ids(fixture_model, converted_fixture_model):
    from transformers import M2M100Tokenizer

    assert is_converted(converted_fixture_model)
    check(fixture_model, converted_fixture_model / "ctranslate2")  # raises on a mismatch
    tokens = json.loads((converted_fixture_model / "ctranslate2" / "shared_vocabulary.json").read_text())
    tokenizer = M2M100Tokenizer.from_pretrained(str(fixture_model))
    assert len(tokens) == json.loads((fixture_model / "config.json").read_text())["vocab_size"]
    assert all(tokens[index] == f"__{code}__" for code, index in tokenizer.lang_code_to_id.items())


@pytest.mark.model
def test_a_model_without_its_conversion_says_how_to_get_one(fixture_model):
    from translator.engine.backends.ctranslate2_backend import ConversionMissing
    from translator.engine.translator import Translator

    with pytest.raises(ConversionMissing, match="save_model.py"):
        Translator(fixture_model, Engine(backend="ctranslate2", device="cpu", warmup=False))


@pytest.mark.model
def test_registration_converts_once_and_again_is_a_no_op(fixture_model, tmp_path):
    from harness.servers import register

    home = tmp_path / "home"
    tag = register(fixture_model, home)
    name, version = tag.split(":")
    stored = home / "models" / name / version
    converted = stored / "ctranslate2" / "model.bin"
    assert converted.is_file()
    info = (stored / "model.yaml").read_text()
    assert "ctranslate2" in info
    before = converted.stat().st_mtime_ns
    time.sleep(0.01)
    assert register(fixture_model, home) == tag
    assert converted.stat().st_mtime_ns == before


@pytest.mark.model
def test_registration_adds_the_conversion_to_an_entry_made_before_it(fixture_model, tmp_path):
    import shutil

    from harness.servers import register

    home = tmp_path / "home"
    tag = register(fixture_model, home)
    name, version = tag.split(":")
    stored = home / "models" / name / version
    shutil.rmtree(stored / "ctranslate2")  # as save_model.py left it before the conversion existed
    entry = (stored / "model.yaml").read_text()
    assert register(fixture_model, home) == tag
    # Converted in place, not deleted and made anew: a conversion that failed half way must not
    # leave an older checkpoint as the latest.
    assert (stored / "model.yaml").read_text() == entry
    assert (home / "models" / name / version / "ctranslate2" / "model.bin").is_file()


@pytest.mark.model
def test_registration_refuses_weights_it_cannot_convert(fixture_model, tmp_path):
    # Refused by save_model.py with a message (exit 2), not by the engine at its first start.
    from harness.servers import register

    broken = tmp_path / "broken"
    broken.mkdir()
    for path in fixture_model.iterdir():
        if path.is_file():
            shutil.copy2(path, broken / path.name)
    (broken / "model.safetensors").write_bytes(b"not a checkpoint")
    with pytest.raises(RuntimeError, match=r"(?s)failed \(2\).*could not be converted for CTranslate2"):
        register(broken, tmp_path / "home")


@pytest.mark.model
def test_registration_without_ctranslate2_serves_on_transformers_and_says_why(fixture_model, tmp_path):
    # The lent GPU machines have no ctranslate2 (its CUDA build needs CUDA 12's cuBLAS): a module of
    # that name that cannot be imported stands for the missing package there.
    import subprocess
    import sys

    from harness.servers import ROOT

    shadow = tmp_path / "without-ctranslate2"
    shadow.mkdir()
    (shadow / "ctranslate2.py").write_text('raise ImportError("No module named ctranslate2")\n')
    home = tmp_path / "home"
    env = {**os.environ, "BENTOML_HOME": str(home), "BENTOML_DO_NOT_TRACK": "true", "PYTHONPATH": str(shadow)}
    done = subprocess.run(
        [sys.executable, "save_model.py", "--model-id", str(fixture_model), "--quiet"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert "without its CTranslate2 conversion: ctranslate2 cannot be imported here" in done.stderr
    name, version = done.stdout.strip().splitlines()[-1].split(":")
    stored = home / "models" / name / version
    assert not (stored / "ctranslate2").exists()
    assert "ctranslate2_unavailable" in (stored / "model.yaml").read_text()
    translate = (
        "import sys; from translator.config import Engine; from translator.contract.protocol import Piece;"
        "from translator.engine.translator import Translator;"
        "t = Translator(sys.argv[1], Engine(device='cpu'));"
        "print(t.backend.name, t.translate([Piece(text='Life is like a box of chocolates.', source='en', "
        "target='fr')])[0].text)"
    )
    served = subprocess.run(
        [sys.executable, "-c", translate, str(stored)], cwd=ROOT, env=env, capture_output=True, text=True, check=False
    )
    assert served.returncode == 0, served.stderr[-3000:]
    assert served.stdout.strip().splitlines()[-1] == "transformers La vie, c'est comme une boîte de chocolats."


@pytest.mark.model
def test_auto_runs_transformers_where_ctranslate2_is_not_installed(converted_fixture_model, monkeypatch):
    # The lent GPU machines: a converted entry, but no ctranslate2 to run it.
    from translator.engine import backends

    monkeypatch.setattr(backends, "ctranslate2_installed", lambda: False)
    assert choose(Engine(device="cpu"), model_dir=converted_fixture_model)[0] == "transformers"
    assert backends.cuda_candidates(converted_fixture_model) == [("compiled", "bfloat16"), ("transformers", "bfloat16")]
