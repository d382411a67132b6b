"""Read GGUF files (llama.cpp's model format) through the ``gguf`` package.

``gguf`` (``pip install layoutkit[gguf]``) parses the header, the metadata and
the tensor table; the tensor data is a read-only memory map of the file, and
every size and stride comes from layoutkit's own GGML type table (ggml's C
definitions: gguf 0.19.0 still has Q8_1 at 40 bytes per block and does not know
Q2_0). Dequantization runs layoutkit's kernels, bit-exact with ggml's
``dequantize_row_*``.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np

from ._errors import LayoutError

__all__ = ["GGUFFile", "GGUFTensorInfo", "load_gguf"]


@dataclass(frozen=True)
class GGUFTensorInfo:
    """One entry of a GGUF file's tensor table.

    Attributes
    ----------
    name : str
        The tensor's name (``"blk.0.attn_q.weight"``).
    type : GGMLType
        Its GGML type.
    ne : tuple of 4 int
        Elements per dim in ggml order (``ne[0]`` fastest; missing dims are 1).
    nb : tuple of 4 int
        Byte strides in ggml order (packed, as ggml lays a fresh tensor out).
    offset : int
        Absolute byte offset of the first block in the file.
    nbytes : int
        Bytes of data.
    n_dims : int
        Number of dims the file records (GGUF keeps trailing 1s it was given).
    """

    name: str
    type: Any
    ne: tuple[int, int, int, int]
    nb: tuple[int, int, int, int]
    offset: int
    nbytes: int
    n_dims: int

    @property
    def shape(self) -> tuple[int, ...]:
        """The logical shape in numpy order (``ne`` reversed, ``n_dims`` dims)."""
        return tuple(reversed(self.ne[: self.n_dims]))

    @property
    def type_name(self) -> str:
        """The type's name (``"Q4_K"``)."""
        return str(self.type.name)

    @property
    def nelements(self) -> int:
        """Number of elements."""
        return self.ne[0] * self.ne[1] * self.ne[2] * self.ne[3]


def _import_gguf() -> Any:
    try:
        import gguf
    except ImportError:
        raise LayoutError(
            "reading GGUF files needs the optional 'gguf' package: pip install 'layoutkit[gguf]'"
            " (or pip install gguf)"
        ) from None
    return gguf


def _reader_class(gguf: Any) -> Any:
    """gguf's GGUFReader, told to keep the raw tensor table instead of typing it itself.

    gguf builds a numpy view per tensor with its own size table, which rejects
    type ids it does not know (Q2_0) and has Q8_1's size wrong; layoutkit
    reads the table entries (name, dims, type id, offset) and sizes them itself.
    """

    class _Reader(gguf.GGUFReader):
        _lk_entries: list[tuple[str, list[int], int, int]]

        def _build_tensors(self, start_offs: int, fields: list[Any]) -> None:
            entries = []
            for field in fields:
                _name_len, name_data, _n_dims, dims, raw_dtype, offset_tensor = field.parts
                entries.append(
                    (
                        bytes(name_data).decode("utf-8"),
                        [int(v) for v in dims.tolist()],
                        int(raw_dtype[0]),
                        int(start_offs + int(offset_tensor[0])),
                    )
                )
            self._lk_entries = entries
            self.tensors: list[Any] = []

    return _Reader


class GGUFFile:
    """A GGUF file opened for reading (see :func:`load_gguf`).

    Attributes
    ----------
    path : str
    version : int
        GGUF format version.
    alignment : int
        Data alignment in bytes (``general.alignment``, default 32).
    data_offset : int
        File offset where the tensor data section starts.
    tensors : list of GGUFTensorInfo
        The tensor table in file order.
    """

    def __init__(self, path: str | os.PathLike[str]) -> None:
        from . import ggml

        self.path = os.fspath(path)
        if not os.path.isfile(self.path):
            raise LayoutError(f"path {self.path!r}: no such file")
        gguf = _import_gguf()
        try:
            reader = _reader_class(gguf)(self.path, "r")
        except (ValueError, IndexError, OverflowError, UnicodeDecodeError) as exc:
            raise LayoutError(f"path {self.path!r}: not a readable GGUF file ({exc})") from None
        self._reader: Any = reader
        self._data: np.ndarray | None = reader.data
        if reader.byte_order != "I":
            raise LayoutError(
                f"path {self.path!r}: the file's byte order is not this machine's; "
                "only little-endian GGUF files are supported"
            )
        self.version = int(reader.fields["GGUF.version"].parts[-1][0])
        self.alignment = int(reader.alignment)
        self.data_offset = int(reader.data_offset)
        tensors = []
        entries = getattr(reader, "_lk_entries", None)
        if entries is None:  # pragma: no cover - a gguf whose reader changed shape
            entries = [
                (t.name, [int(v) for v in t.shape], int(t.tensor_type), int(t.data_offset))
                for t in reader.tensors
            ]
        for name, dims, tid, offset in entries:
            try:
                info = ggml.type_info(tid)
            except LayoutError:
                raise LayoutError(
                    f"tensor {name!r} in {self.path!r}: type id {tid} is not a ggml_type"
                ) from None
            if info.removed:
                raise LayoutError(f"tensor {name!r} in {self.path!r}: {info.note}")
            if not 1 <= len(dims) <= ggml.GGML_MAX_DIMS:
                raise LayoutError(
                    f"tensor {name!r} in {self.path!r}: {len(dims)} dims; expected 1 to 4"
                )
            ne = ggml._ne4(dims, f"tensor {name!r} ne")
            if ne[0] % info.block_size:
                raise LayoutError(
                    f"tensor {name!r} in {self.path!r}: ne[0]={ne[0]} is not a multiple of "
                    f"{info.name}'s block size {info.block_size}"
                )
            nb = ggml._packed_nb(info, ne)
            nbytes = info.row_size(ne[0]) * ne[1] * ne[2] * ne[3]
            if offset + nbytes > reader.data.size:
                raise LayoutError(
                    f"tensor {name!r} in {self.path!r}: bytes {offset}..{offset + nbytes} lie "
                    f"past the end of the file ({reader.data.size} bytes); truncated file?"
                )
            tensors.append(GGUFTensorInfo(name, info.type, ne, nb, offset, nbytes, len(dims)))
        self.tensors: list[GGUFTensorInfo] = tensors
        self._by_name = {t.name: t for t in tensors}

    # -- table ------------------------------------------------------------------

    def __len__(self) -> int:
        return len(self.tensors)

    def __iter__(self) -> Iterator[GGUFTensorInfo]:
        return iter(self.tensors)

    def __contains__(self, name: object) -> bool:
        return name in self._by_name

    def __getitem__(self, name: str) -> GGUFTensorInfo:
        return self.info(name)

    def names(self) -> list[str]:
        """Tensor names in file order."""
        return [t.name for t in self.tensors]

    def info(self, name: str) -> GGUFTensorInfo:
        """The table entry of tensor ``name``."""
        if isinstance(name, GGUFTensorInfo):
            name = name.name
        try:
            return self._by_name[name]
        except KeyError:
            shown = ", ".join(repr(n) for n in self.names()[:8])
            more = f", ... ({len(self)} in all)" if len(self) > 8 else ""
            raise LayoutError(
                f"name {name!r}: no such tensor in {self.path!r}; it has {shown}{more}"
            ) from None

    @property
    def metadata(self) -> dict[str, Any]:
        """The key/value metadata as Python values (strings, numbers, lists)."""
        out: dict[str, Any] = {}
        for key, field in self._reader.fields.items():
            if key.startswith("GGUF."):
                continue
            try:
                out[key] = field.contents()
            except Exception:  # pragma: no cover - a field gguf cannot decode
                out[key] = None
        return out

    # -- data -------------------------------------------------------------------

    def _bytes(self, t: GGUFTensorInfo) -> np.ndarray:
        if self._data is None:
            raise LayoutError(f"{self.path!r} is closed")
        return self._data[t.offset : t.offset + t.nbytes]

    def raw(self, name: str) -> np.ndarray:
        """Tensor ``name`` as stored: a read-only, zero-copy uint8 view of the file.

        Shape ``(*shape[:-1], row_bytes)`` (the :func:`layoutkit.ggml.quantize`
        layout: the last axis holds a row's blocks), ready for
        :func:`layoutkit.ggml.dequantize`.
        """
        t = self.info(name)
        row_bytes = t.nb[1] if t.ne[0] else 0
        view = np.asarray(self._bytes(t)).reshape(*t.shape[:-1], row_bytes)
        view.flags.writeable = False
        return view

    def dequantize(self, name: str, *, threads: int = 1, out: np.ndarray | None = None) -> Any:
        """Tensor ``name`` as float32 in numpy order (shape ``info.shape``).

        Block types go through :func:`layoutkit.ggml.dequantize` (bit-exact with
        ggml); F16/BF16/F32 convert exactly; I8..I64 and F64 are cast to float32
        (use :meth:`array` for their own dtype).
        """
        from . import ggml

        t = self.info(name)
        info = ggml.type_info(t.type)
        if info.can_dequantize:
            return ggml.dequantize(self.raw(name), info.id, threads=threads, out=out)
        vals = self.array(name).astype(np.float32)
        if out is not None:
            out[...] = vals
            return out
        return vals

    def array(self, name: str) -> np.ndarray:
        """A non-block tensor (F32, F16, BF16, I8..I64, F64) in its own dtype, zero-copy, read-only."""
        from . import ggml

        t = self.info(name)
        if ggml.type_info(t.type).block_size != 1:
            raise LayoutError(
                f"name {name!r}: {t.type_name} is a block type with no per-element dtype; "
                "use .dequantize() or .raw()"
            )
        return self.raw(name).view(self.tensor(name).element_dtype()).reshape(t.shape)

    def tensor(self, name: str) -> Any:
        """Tensor ``name`` as a :class:`layoutkit.ggml.Tensor` over the file's bytes (read-only)."""
        from . import ggml

        t = self.info(name)
        data = self._bytes(t)
        return ggml.new_tensor(t.type, *t.ne, data=data if data.size else np.zeros(0, np.uint8))

    def close(self) -> None:
        """Drop the memory map (views handed out earlier keep their own reference)."""
        self._data = None
        self._reader = None

    def __enter__(self) -> GGUFFile:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"<GGUFFile {self.path!r}: version {self.version}, {len(self)} tensors>"


def load_gguf(path: str | os.PathLike[str]) -> GGUFFile:
    """Open a GGUF file: its tensor table, metadata, and each tensor raw or dequantized.

    Reading goes through the optional ``gguf`` package
    (``pip install 'layoutkit[gguf]'``); the data stays in a read-only memory map.

    Parameters
    ----------
    path : str or os.PathLike

    Returns
    -------
    GGUFFile
        ``.tensors`` lists every tensor's name, type, ``ne``, ``nb``, file
        offset and size; ``.dequantize(name)`` gives float32 values (bit-exact
        with ggml), ``.raw(name)`` the stored blocks, ``.tensor(name)`` a
        :class:`layoutkit.ggml.Tensor`, ``.metadata`` the key/value pairs.

    Raises
    ------
    LayoutError
        Missing file, not a GGUF file, a tensor entry that does not fit the
        file, or the ``gguf`` package is not installed.

    Examples
    --------
    >>> import tempfile, os, numpy as np, gguf, layoutkit as lk
    >>> path = os.path.join(tempfile.mkdtemp(), "tiny.gguf")
    >>> w = gguf.GGUFWriter(path, arch="llama")
    >>> q = lk.ggml.quantize(np.linspace(-1, 1, 64, dtype=np.float32).reshape(2, 32), "Q8_0")
    >>> w.add_tensor("w", q, raw_dtype=gguf.GGMLQuantizationType.Q8_0)
    >>> w.write_header_to_file(); w.write_kv_data_to_file(); w.write_tensors_to_file(); w.close()
    >>> f = lk.ggml.load_gguf(path)
    >>> t = f.tensors[0]
    >>> t.name, t.type_name, t.ne, t.nb
    ('w', 'Q8_0', (32, 2, 1, 1), (34, 34, 68, 68))
    >>> f.dequantize("w").shape
    (2, 32)
    """
    return GGUFFile(path)
