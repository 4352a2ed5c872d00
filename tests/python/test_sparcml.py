"""Unit tests of python/sparcml/ (no MPI processes): the byte layout is
checked against layouts written here independently with struct.pack, from
sparcml-stream(7)."""
import inspect
import os
import re
import struct
import sys
import unittest

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))
import sparcml  # noqa: E402


def expected_sparse(dim, fmt_char, vt, idx, vals):
    """The bytes of a sparse stream, from the man page."""
    iw = 4 if dim <= 2 ** 32 else 8
    head = struct.pack("=IBBBBQQQ", 0x4D435053, 1, vt, iw, 0, dim, len(idx), 0)
    ind = b"".join(struct.pack("=I" if iw == 4 else "=Q", i) for i in idx)
    ind += b"\0" * ((-len(ind)) % 8)
    return head + ind + b"".join(struct.pack("=" + fmt_char, v) for v in vals)


def expected_dense(dim, fmt_char, vt, values):
    head = struct.pack("=IBBBBQQQ", 0x4D435053, 1, vt, 4 if dim <= 2 ** 32 else 8, 1, dim, dim, 0)
    return head + b"".join(struct.pack("=" + fmt_char, v) for v in values)


class Layout(unittest.TestCase):
    def test_sparse_bytes_match_the_man_page(self):
        for vt, dt, ch in [(sparcml.FLOAT, np.float32, "f"), (sparcml.DOUBLE, np.float64, "d"),
                           (sparcml.INT32, np.int32, "i"), (sparcml.INT64, np.int64, "q")]:
            idx, vals = [2, 7, 40], [1, -3, 5]
            buf = sparcml.from_sorted(idx, np.array(vals, dt), 100)
            want = expected_sparse(100, ch, vt, idx, vals)
            self.assertEqual(buf.tobytes()[:len(want)], want, dt)

    def test_dense_bytes_match_the_man_page(self):
        vals = np.arange(1, 11, dtype=np.float32)
        buf = sparcml.from_dense(vals)
        want = expected_dense(10, "f", sparcml.FLOAT, list(vals))
        self.assertEqual(buf.tobytes()[:len(want)], want)

    def test_index_width_8_beyond_2_to_the_32(self):
        dim = 2 ** 32 + 10
        buf = sparcml.from_sorted([5, 2 ** 32 + 3], np.array([1.0, 2.0]), dim)
        want = expected_sparse(dim, "d", sparcml.DOUBLE, [5, 2 ** 32 + 3], [1.0, 2.0])
        self.assertEqual(buf.tobytes()[:len(want)], want)
        self.assertEqual(sparcml.header(buf)["index_width"], 8)
        idx, vals = sparcml.to_pairs(buf)
        self.assertEqual(list(idx), [5, 2 ** 32 + 3])

    def test_capacity_is_dense_plus_a_word(self):
        self.assertEqual(sparcml.capacity(10, sparcml.FLOAT), (32 + 40 + 8 + 7) // 8)
        self.assertEqual(sparcml.sparse_capacity(10, sparcml.DOUBLE, 3), (32 + 16 + 24) // 8)


class SizeRule(unittest.TestCase):
    def test_sparse_exactly_while_smaller(self):
        # float, dim 100: sparse while nnz * 8 < 400, i.e. nnz < 50
        for nnz, fmt in [(49, sparcml.SPARSE), (50, sparcml.DENSE), (60, sparcml.DENSE)]:
            buf = sparcml.from_sorted(range(nnz), np.ones(nnz, np.float32), 100)
            self.assertEqual(sparcml.header(buf)["format"], fmt, nnz)
            self.assertLessEqual(sparcml.header(buf)["nnz"], 100)
            self.assertEqual(float(sparcml.to_dense(buf).sum()), float(nnz))


class Builders(unittest.TestCase):
    def test_pairs_sorted_and_duplicates_summed_in_input_order(self):
        idx = [5, 1, 5, 9, 1]
        vals = np.array([10, 1, 20, 3, 2], np.int64)
        dense = sparcml.to_dense(sparcml.from_pairs(idx, vals, 12))
        self.assertEqual(list(dense), [0, 3, 0, 0, 0, 30, 0, 0, 0, 3, 0, 0])
        # floats: the sum is done left to right in input order
        f = np.array([1e8, 1.0, -1e8], np.float32)
        got = sparcml.to_dense(sparcml.from_pairs([4, 4, 4], f, 8))[4]
        self.assertEqual(got, (np.float32(1e8) + np.float32(1.0)) + np.float32(-1e8))

    def test_pairs_lone_negative_zero_stays_negative(self):
        # 0.0 + -0.0 is +0.0: a sum must start from the first value
        buf = sparcml.from_pairs([7, 2], np.array([-0.0, 1.0], np.float32), 100)
        self.assertEqual(sparcml.to_pairs(buf)[1].view(np.uint32)[1], 0x80000000)

    def test_fills_a_buffer_of_exactly_sparse_capacity_words(self):
        # 32 + 8 + 8 bytes: a whole number of words, no spare word needed
        words = sparcml.sparse_capacity(10, sparcml.FLOAT, 2)
        self.assertEqual(words, 6)
        buf = sparcml.from_sorted([1, 5], np.ones(2, np.float32), 10, out=np.zeros(words, np.uint64))
        self.assertEqual(sparcml.header(buf)["nnz"], 2)

    def test_dense_round_trip_keeps_negative_zero(self):
        a = np.zeros(100, np.float64)
        a[[3, 50]] = [-0.0, 7.5]
        buf = sparcml.from_dense(a)
        self.assertEqual(sparcml.header(buf)["nnz"], 2)
        back = sparcml.to_dense(buf)
        self.assertTrue(np.signbit(back[3]))
        self.assertEqual(back.tobytes(), a.tobytes())

    def test_round_trip_every_type(self):
        rng = np.random.default_rng(1)
        for dt in (np.float32, np.float64, np.int32, np.int64):
            a = np.zeros(1000, dt)
            pos = rng.choice(1000, 37, replace=False)
            a[pos] = rng.integers(1, 100, 37).astype(dt)
            self.assertTrue(np.array_equal(sparcml.to_dense(sparcml.from_dense(a)), a), dt)


class Errors(unittest.TestCase):
    def test_index_out_of_range(self):
        with self.assertRaisesRegex(ValueError, "index 12 out of range"):
            sparcml.from_pairs([1, 12], np.ones(2, np.float32), 12)

    def test_unsorted_for_from_sorted(self):
        with self.assertRaisesRegex(ValueError, "not strictly increasing"):
            sparcml.from_sorted([3, 3], np.ones(2, np.float32), 12)

    def test_buffer_too_small(self):
        with self.assertRaisesRegex(ValueError, "too small"):
            sparcml.from_sorted([1], np.ones(1, np.float32), 1000, out=np.zeros(3, np.uint64))

    def test_index_beyond_dim_in_a_stream_is_malformed(self):
        buf = sparcml.from_sorted([1, 5], np.ones(2, np.float32), 10, out=np.zeros(8, np.uint64))
        buf.view(np.uint8)[32:36].view(np.uint32)[0] = 50
        with self.assertRaisesRegex(ValueError, "index 50 >= dim 10"):
            sparcml.to_dense(buf)

    def test_wrong_dtype(self):
        with self.assertRaisesRegex(TypeError, "unsupported dtype"):
            sparcml.from_dense(np.zeros(4, np.int8))
        with self.assertRaisesRegex(TypeError, "uint64"):
            sparcml.header(np.zeros(8, np.float64))

    def test_malformed_stream(self):
        buf = sparcml.from_sorted([1], np.ones(1, np.float32), 10)
        buf.view(np.uint8)[0] ^= 0xFF
        with self.assertRaisesRegex(ValueError, "not a sparcml v1 stream"):
            sparcml.to_dense(buf)
        buf = sparcml.from_sorted([1], np.ones(1, np.float32), 10)
        buf.view(np.uint8)[16] = 11  # nnz 11 > dim 10
        with self.assertRaisesRegex(ValueError, "malformed"):
            sparcml.header(buf)


class Package(unittest.TestCase):
    def test_version_is_configure_ac_version(self):
        ac = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "configure.ac")
        with open(ac) as f:
            m = re.search(r"AC_INIT\(\[sparcml\], \[([^]]+)\]", f.read())
        self.assertIsNotNone(m, "no AC_INIT([sparcml], [VERSION]) in configure.ac")
        self.assertEqual(sparcml.__version__, m.group(1))

    def test_public_functions_have_type_hints(self):
        for name in sparcml.__all__:
            obj = getattr(sparcml, name)
            if inspect.isfunction(obj):
                sig = inspect.signature(obj)
                self.assertIsNot(sig.return_annotation, inspect.Signature.empty, name)
                for p in sig.parameters.values():
                    self.assertIsNot(p.annotation, inspect.Parameter.empty, "%s(%s)" % (name, p.name))
        self.assertTrue(os.path.exists(os.path.join(os.path.dirname(sparcml.__file__), "py.typed")))

    @unittest.skipIf("libsparcml" in os.environ.get("LD_PRELOAD", ""), "the library is preloaded")
    def test_without_the_library_inactive_and_calls_say_so(self):
        self.assertIs(sparcml.active(), False)
        buf = sparcml.from_sorted([1], np.ones(1, np.float32), 10)
        for call in (sparcml.allreduce, sparcml.iallreduce):
            # comm is never used: the check comes before any MPI call
            with self.assertRaisesRegex(RuntimeError, r"libsparcml\.so is not loaded.*LD_PRELOAD="):
                call(None, buf)


class Torch(unittest.TestCase):
    """CPU tensors through their NumPy view (tensor.numpy()), zero-copy."""

    def setUp(self):
        try:
            import torch
        except ImportError:
            self.skipTest("no torch (python3-torch)")
        self.torch = torch

    def test_tensor_views_in_and_out_without_copies(self):
        torch = self.torch
        grad = torch.zeros(100, dtype=torch.float32)
        grad[[3, 50]] = torch.tensor([1.5, -2.0])
        buf = sparcml.from_dense(grad.numpy())
        idx, vals = sparcml.to_pairs(buf)
        self.assertEqual(idx.tolist(), [3, 50])
        tv = torch.from_numpy(vals)  # shares buf's memory
        self.assertEqual(tv.data_ptr(), vals.ctypes.data)
        dense = torch.empty(100, dtype=torch.float32)
        sparcml.to_dense(buf, out=dense.numpy())  # writes the tensor's memory
        self.assertTrue(torch.equal(dense, grad))


if __name__ == "__main__":
    unittest.main()
