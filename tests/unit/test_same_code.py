"""Post's generated code equal to pre's but for the sides' names (``emit.same_code``): nothing
else may pass for it."""
from pathlib import Path

from harnessgen.harness.emit import SideSource, same_code

FRAME = "#include \"{name}.h\"\nvoid __program_{name}(double *A, int N) {{ for (int i = 0; i < N; ++i) A[i] {op}; }}\n"
HEADER = "void __program_{name}(double *A, int N);\n"


def side(folder: Path, name: str, op: str = "*= 2.0", header: str = HEADER, cuda=()) -> SideSource:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{name}.cpp").write_text(FRAME.format(name=name, op=op))
    (folder / f"{name}.h").write_text(header.format(name=name))
    return SideSource(name, folder / f"{name}.cpp", ["N"], [("A", True), ("N", False)], list(cuda))


def test_only_the_sides_names_may_differ(tmp_path):
    pre = side(tmp_path, "hg_pre")
    assert same_code(pre, side(tmp_path, "hg_post"))
    assert not same_code(pre, side(tmp_path / "op", "hg_post", op="*= 3.0"))
    assert not same_code(pre, side(tmp_path / "header", "hg_post", header="void __program_{name}(double *A, long N);\n"))


def test_post_naming_pre_where_pre_names_itself_is_other_code(tmp_path):
    """Post's code holding pre's name at a place where pre's code holds its own name is not
    the same code (each name is replaced by a character no code holds, not by the other name)."""
    pre = side(tmp_path, "hg_pre")
    post = side(tmp_path / "named", "hg_post")
    post.cpp.write_text(post.cpp.read_text().replace('"hg_post.h"', '"hg_pre.h"'))
    assert not same_code(pre, post)


def test_a_side_on_the_gpu_is_never_taken_for_the_same_code(tmp_path):
    pre = side(tmp_path, "hg_pre")
    post = side(tmp_path / "gpu", "hg_post", cuda=[tmp_path / "gpu" / "hg_post_cuda.cu"])
    assert not same_code(pre, post)
