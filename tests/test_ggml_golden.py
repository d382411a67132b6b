"""Golden digests of ggml's C output (ggml 0.15.3 via ggml-python, x86-64, no FMA).

Committed so that byte-exactness is checked without the C library, including
the types gguf cannot quantize (Q8_1, Q8_K, Q1_0, NVFP4, Q2_K..Q6_K). Inputs are built
from integer arithmetic only (no RNG stream that could change between numpy
versions): rows mixing normal-size, tiny (1e-6) and huge (1e4) values and
exact zeros; random bytes for dequantization. Regenerate with the C oracle in
``test_ggml_c_oracle.py`` (the generator is ``golden_inputs`` below plus
``hashlib.sha256`` of ggml's bytes).
"""

from __future__ import annotations

import hashlib

import numpy as np
import pytest

import layoutkit as lk

G = lk.ggml


def det_floats(rows: int, n: int, seed: int) -> np.ndarray:
    i = np.arange(rows * n, dtype=np.uint64) + np.uint64(seed) * np.uint64(1000003)
    h = (i * np.uint64(6364136223846793005) + np.uint64(1442695040888963407)) >> np.uint64(11)
    u = (h & np.uint64((1 << 24) - 1)).astype(np.float64) / float(1 << 24)
    v = (h >> np.uint64(24)) & np.uint64(0xFF)
    scale = np.where(v < 8, 1e-6, np.where(v < 16, 1e4, 1.0))
    x = ((u * 2 - 1) * 3 * scale).astype(np.float32)
    x[(v == 255)] = 0.0
    return x.reshape(rows, n)


def det_bytes(n: int, seed: int) -> np.ndarray:
    i = np.arange(n, dtype=np.uint64) + np.uint64(seed) * np.uint64(7919)
    h = (i * np.uint64(6364136223846793005) + np.uint64(1442695040888963407)) >> np.uint64(33)
    return (h & np.uint64(0xFF)).astype(np.uint8)


QUANTIZE_SHA256 = {
    "F16": "6367f6128d0deb5c06ad438981675f9ef8e642bc6cc8b763bdf8d73387da81cd",
    "BF16": "53ba0bf0ad018c65ed9eae777dd9c851bc20ea37c1cfbac8852d1dd04a615e72",
    "Q4_0": "f8fb14490dcab968fde925ef4725ae9daa2bc7101b57f60d6ff49c4787426021",
    "Q4_1": "79440b802a443cd710a81e37bd71044143d97faf8110175fe0113ecc7549d7e1",
    "Q5_0": "88e5ec022bfb0e67774d399c08d445ff589c55ed41486527f5eb5b685a52915c",
    "Q5_1": "8554141f648f763392fc50828707885d8c80ef63295669ea8481f6f176a25d93",
    "Q8_0": "9d4e0f9806bd9041858b92dd044053b3b0f2adbbfd442724c08a473c70fa157f",
    "Q8_1": "c3aa591fb563172a96da55c5e421598b362aef63b47dc68e49d17910f1a92d43",
    "TQ1_0": "bae81c48439a0b43be14d9fa514d82cd3a34a109734e8158fb501152d8593189",
    "TQ2_0": "373100007653dee9490f1241d4bc9816abdddcd64e56e6dcb948f11febb8331d",
    "MXFP4": "aa340edd11492630a40029469eee00426312b07e5b6c56732280b7ed51aba69d",
    "Q8_K": "bd4afb8b6b9c42cbc06fb0e642cece7c9cfb142b508767d030accc4fc546dd7a",
    "Q1_0": "6a5a876865f0cda165c4d46d8b430c729bae95dd97bd690dbfc1692883552cec",
    "NVFP4": "bcce5f0b822d33b3eb3b267bc546e00117943c7fe9a6eefc081dd52a7707c2ae",
    "Q2_K": "6299181d809879eed89303657113684be3bb812cd348a6b70b058b6dd3b75a85",
    "Q3_K": "9c9afc2a1b3c1b0d0d4eaad1324c59550a20ba13bd0f91b591f90c7d388f99b7",
    "Q4_K": "49f80c5d8b42d133e50561a4c0e330cfdd27da3cc9751100461697e27f347384",
    "Q5_K": "858af4d9794f4173f88ec63d8647856d3bbccbb5c06b3a86434966d47913e511",
    "Q6_K": "0f77c7fbffca626fbe3a32abe9f6c18410c7fd6721532c985a5eb836e418e06e",
}
DEQUANTIZE_SHA256 = {
    "F16": "7f543ab8a5a83012e60a09f0e8c9b1f29f7f4caf60fd8e9fe8bfce272e1fb9af",
    "Q4_0": "2b7885026214656fa76939484d472a8dd79bdac5a6199832a32054ca9d21f9ab",
    "Q4_1": "e9440e2f9ff344a295f42b4bf5323f91f945a4a1da2c4bb6eeeefa109c1fd0ca",
    "Q5_0": "0418f572152beacb2c81dea82f03b65bc94ed6df880a69fcbda6102ecaa455d7",
    "Q5_1": "81b7c4dc0b2a0f74a0c9d2af298839afc64bc2915cb1d8872c0008605967444b",
    "Q8_0": "87b2cedbf5a34ff3bdc43bb8675a7bde4e54381c3be1aadb605b6164a7d8a376",
    "Q2_K": "beb5b62ff2f5050d249d2b663e2c40f612c6e9ad50f6f0e8392da8b6a624d520",
    "Q3_K": "a5b45ee7c2ed39a728dd39369f933978f71aeae6267e16ef3f52223895c3c5c9",
    "Q4_K": "f679db66bcc1ad1ae07da35b1f817ee487da5a72668961b72577cbeed9b38649",
    "Q5_K": "e1a11c80a2ace9cddc4b32e14ae3542e48241604524eb3830fc8bfde40d08b5c",
    "Q6_K": "487f32994f7d2ecdc4ef6b2c8cd9610c9832e09dd9b2b80ebb7ede749e3e98fc",
    "Q8_K": "d6982fa6deca7e463af4f9e7275b57a3b4ee010357ada715338870ddb93be751",
    "IQ2_XXS": "248f2a190883c54585594906a3bfed811ed252897a8660c12398a183584c6503",
    "IQ2_XS": "d2f0e0895348d6bc72a899057a2542abbeeca62c2fd3187e06d7b65416bb348d",
    "IQ3_XXS": "d1c91ab8a4bf7a84a62650e7a2dd069e48ee40429033d2c139e65e57f008d8ba",
    "IQ1_S": "1c974049cee37d6afb26b4479f2823e1d8e003f167ef17e42b761ac8c479431f",
    "IQ4_NL": "a583eeb7cfecff9800378c0030a2e74f0c36b569da269bb984462ad3e071bf11",
    "IQ3_S": "46a290327cfe24b6c7580d2b729f8a4f5430c075bb2b6077cf67e903ce568aed",
    "IQ2_S": "79bcc13074993199d23c5933a9bab88491af0ab2aaae57b7f4f9a0e63516ec4d",
    "IQ4_XS": "f5910255ae602cbd5c32968f3cd26e725f0c53a929d2bc1ddd0426836ecce2d9",
    "IQ1_M": "621790b1d627cae381caabe29725c70ce1ff7dfc48a4dd2bba2d78f46e88f2d0",
    "BF16": "e859568b52c706d397be43ca0eca3308c44be47ff60dce74e2d41144e52b5bb7",
    "TQ1_0": "fafc0e472a7947d0c9f4df5f724eb850aa4d2e0f18af723bcb25b9614c3e7c5b",
    "TQ2_0": "4faee94ac44362d6022d9df1fe48be0382ef3d5ba896451c09023472f165a2fe",
    "MXFP4": "54c8ddad13a85f08f66d6dbeb83ffc440f304c1963b370c8f4530c7736d45b23",
    "NVFP4": "2d91f814e8611d4239e07cc920f34baaa7257393ec2cbe7300530a52fde23b87",
    "Q1_0": "da605ede51d1300261981e8c662097afbfc9160ed83d419d49eb6e623cb2259d",
}


@pytest.mark.parametrize("name", sorted(QUANTIZE_SHA256))
def test_quantize_golden(name):
    x = det_floats(16, 1024, G.type_info(name).id)
    q = G.quantize(x, name)
    assert hashlib.sha256(q.tobytes()).hexdigest() == QUANTIZE_SHA256[name]


@pytest.mark.parametrize("name", sorted(DEQUANTIZE_SHA256))
def test_dequantize_golden(name):
    info = G.type_info(name)
    q = det_bytes(64 * info.type_size, info.id).reshape(4, -1)
    y = G.dequantize(q, name)
    assert hashlib.sha256(y.tobytes()).hexdigest() == DEQUANTIZE_SHA256[name]
