"""TinyStories data for the project's twin models: story splitting, the held-out split, packing.

The corpus (../shared/data/corpus/tinystories_train_head_944k.txt, TinyStories, CDLA-Sharing-1.0) has
one story per group of paragraphs: paragraphs of a story are separated by one blank line, and a new
story starts on the line right after the previous story's last paragraph (no blank line between).

Splits (deterministic, by story order in the file):
  * held-out: the last 5% of stories (never trained on; evaluation and the tokenizer agreement test);
  * validation: the last 2% of the remaining stories (used only to watch overfitting during training);
  * train: everything before.
Training packs the stories of a split into one stream (BOS story EOS BOS story EOS ...) and cuts it
into fixed windows, at a random offset each epoch.
"""
import os
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
DEFAULT_CORPUS = REPO.parent / "shared" / "data" / "corpus" / "tinystories_train_head_944k.txt"
HELD_OUT_FRACTION = 0.05
VALIDATION_FRACTION = 0.02

# Special tokens of the project's tokenizer, in id order after the byte-level BPE vocabulary.
BOS, EOS, PAD, MASK = "<|startoftext|>", "<|endoftext|>", "<|pad|>", "<|mdm_mask|>"
SPECIAL_TOKENS = [BOS, EOS, PAD, MASK]


def corpus_path():
    """The corpus file: $UNMASK_CORPUS or ../shared/data/corpus/tinystories_train_head_944k.txt."""
    return Path(os.environ.get("UNMASK_CORPUS", DEFAULT_CORPUS))


def split_stories(text):
    """Splits the corpus text into stories (list of str, paragraphs joined by a blank line)."""
    stories, paragraphs, prev_blank = [], [], True
    for line in text.split("\n"):
        line = line.rstrip()
        if not line:
            prev_blank = True
            continue
        if not prev_blank and paragraphs:  # a line right after a paragraph starts a new story
            stories.append("\n\n".join(paragraphs))
            paragraphs = []
        paragraphs.append(line)
        prev_blank = False
    if paragraphs:
        stories.append("\n\n".join(paragraphs))
    return stories


def load_splits(path=None):
    """Returns dict(train=[...], validation=[...], held_out=[...]) of story strings."""
    text = Path(path or corpus_path()).read_text(encoding="utf-8")
    stories = split_stories(text)
    n_held = max(1, round(len(stories) * HELD_OUT_FRACTION))
    rest, held_out = stories[:-n_held], stories[-n_held:]
    n_val = max(1, round(len(rest) * VALIDATION_FRACTION))
    return {"train": rest[:-n_val], "validation": rest[-n_val:], "held_out": held_out}


def token_stream(token_lists, bos_id, eos_id):
    """All stories as one stream: BOS story EOS BOS story EOS ... (LLaDA/GPT-style packing)."""
    out = []
    for ids in token_lists:
        out.append(bos_id)
        out.extend(ids)
        out.append(eos_id)
    return out


def stream_windows(stream, seq_len, offset=0):
    """Consecutive windows of seq_len ids starting at `offset` (wrapping around the end), so that
    every epoch can see differently cut windows. Returns a list of lists."""
    n = len(stream)
    count = n // seq_len
    doubled = stream + stream
    return [doubled[offset + i * seq_len: offset + (i + 1) * seq_len] for i in range(count)]


def pack_stories(token_lists, seq_len, bos_id, eos_id, pad_id):
    """Training sequences of exactly seq_len ids: BOS + story + EOS, then PAD to the end.

    A story longer than seq_len - 2 tokens is cut into chunks: the first starts with BOS, the
    last ends with EOS. Returns (sequences, lengths): lengths = tokens before the padding.
    """
    seqs, lengths = [], []
    for ids in token_lists:
        body = [bos_id] + list(ids) + [eos_id]
        for start in range(0, len(body), seq_len):
            chunk = body[start:start + seq_len]
            lengths.append(len(chunk))
            seqs.append(chunk + [pad_id] * (seq_len - len(chunk)))
    return seqs, lengths
