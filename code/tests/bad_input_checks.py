"""What every bad-input row of test_bad_inputs.py and test_bad_inputs_sequences_models.py
asserts about the error it raised (one place, so that both files hold the
package's errors to the same rule)."""
from __future__ import annotations

import mhacourse as mc


def assert_the_packages_error(info, arg: str) -> None:
    """``info`` (a ``pytest.raises`` result) holds the package's own error:
    an ``InputError`` that is a ``ValueError``, made in ``mhacourse._validate``,
    naming ``arg``, on one line, and raised by the package's own checks, not
    from inside torch or NumPy."""
    e = info.value
    assert isinstance(e, mc.InputError) and isinstance(e, ValueError)
    assert type(e).__module__ == "mhacourse._validate"
    msg = str(e)
    assert arg in msg, msg
    assert "\n" not in msg and len(msg) < 600, msg  # one line
    frame = info.traceback[-1]
    assert "/mhacourse/" in str(frame.path), frame.path
