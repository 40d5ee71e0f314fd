"""Child side of the CUDA IPC test (importable: the spawn start method pickles functions by
module name). Not a test module."""

from __future__ import annotations

import os
import sys
import traceback

_HERE = os.path.dirname(os.path.abspath(__file__))
if _HERE not in sys.path:
    sys.path.insert(0, _HERE)


def child(inbox, outbox):
    """Receives ``(tensor, expected_list, stride, storage_offset)``, checks it, multiplies
    it by -2 in place, reports; then waits for the parent's write and reports what it sees."""
    try:
        import strata as st

        t, expected, stride, offset = inbox.get(timeout=60)
        info = {
            "device": t.device,
            "is_cuda": t.is_cuda,
            "shape": tuple(t.shape),
            "stride": t.stride(),
            "offset": t.storage_offset(),
            "values_ok": t.tolist() == expected,
            "layout_ok": t.stride() == stride and t.storage_offset() == offset,
        }
        t.mul_(-2)
        st.cuda.synchronize()
        outbox.put(("wrote", info))
        msg = inbox.get(timeout=60)
        assert msg == "parent wrote", msg
        outbox.put(("seen", t.tolist()))
        # A second tensor of the same storage arrives as a view of the same memory.
        t2 = inbox.get(timeout=60)
        outbox.put(("second", t2.tolist(), t2.data_ptr() - t.data_ptr()))
        del t, t2
        st.cuda.synchronize()
        outbox.put(("done", None))
    except BaseException:  # report, do not hang the parent
        outbox.put(("error", traceback.format_exc()))
