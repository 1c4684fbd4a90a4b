"""The JSON-lines metrics file of `halogen train --metrics FILE` (docs/train.md).

Lines, in order: an optional header `{"config": {...}, "version": ..., "commit": ..., ...}` (the run's
resolved configuration), one object per evaluated epoch (`epoch`, `loss`, `train_acc`, ...), and a summary
`{"final": true, "best_epoch": ..., "test_acc_at_best": ...}`. A resumed run appends to the same file, so a file
may hold several headers and summaries; epochs are kept in file order.
"""
import json


def _parse(path):
    headers, epochs, finals = [], [], []
    with open(path) as f:
        for number, line in enumerate(f, 1):
            line = line.strip()
            if not line:
                continue
            try:
                record = json.loads(line)
            except json.JSONDecodeError as e:
                raise ValueError(f"{path}: line {number}: not JSON ({e.msg})") from None
            if not isinstance(record, dict):
                raise ValueError(f"{path}: line {number}: expected a JSON object")
            if "config" in record and "epoch" not in record:
                headers.append(record)
            elif record.get("final"):
                finals.append(record)
            else:
                epochs.append(record)
    return headers, epochs, finals


def read_metrics_header(path):
    """The run's header object (`config`, `version`, `commit`, `hosts`, `ranks`, `device`, `start_time`), or
    None when the file has none (files written before headers existed). With several (a resumed run), the first."""
    headers, _, _ = _parse(path)
    return headers[0] if headers else None


def read_metrics_summary(path):
    """The last `{"final": true, ...}` object (best_epoch, best_valid_acc, test_acc_at_best, ...), or None."""
    _, _, finals = _parse(path)
    return finals[-1] if finals else None


def read_metrics(path, as_dataframe=True):
    """The per-epoch records of a metrics file: a pandas DataFrame (one row per record, columns as in the file)
    when pandas is installed and `as_dataframe`, else a list of dicts. A DataFrame carries
    `df.attrs["header"]` (read_metrics_header, or None), `df.attrs["headers"]` (all of them),
    `df.attrs["final"]` (read_metrics_summary, or None) and `df.attrs["finals"]`."""
    headers, epochs, finals = _parse(path)
    if as_dataframe:
        try:
            import pandas
        except ImportError:
            return epochs
        frame = pandas.DataFrame.from_records(epochs)
        frame.attrs["header"] = headers[0] if headers else None
        frame.attrs["headers"] = headers
        frame.attrs["final"] = finals[-1] if finals else None
        frame.attrs["finals"] = finals
        return frame
    return epochs
