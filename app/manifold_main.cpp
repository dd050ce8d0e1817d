// manifold: the command-line tool. Thin: parses the subcommand and reports
// errors as one line on stderr (exit 2 for bad arguments, 1 for failures).
#include <cstdio>
#include <cstring>
#include <exception>
#include <string>

#include "backends/backends.h"
#include "cli/commands.h"
#include "manifold/error.h"
#include "manifold/fatal_signal.h"

namespace {

const char* kUsage = R"(usage: manifold COMMAND [options]    (manifold COMMAND --help: its options and defaults)

  info DATA                               dataset facts: N, d, type, value range
  knn DATA -k K -o OUTDIR [--metric euclidean|cosine|pearson]
          [--backend auto|cpu|gpu|mpi] [--select auto|warp|quick|sort|heap|merge|bitonic]
          [--devices all|0,1] [--gpu-memory BYTES] [--precision exact|fast-exact]
          [--keep-self] [--threads T] [--mask FILE|none] [--overwrite]
  embed GRAPHDIR [--k K] [--epsilon auto|median|VALUE] [--alpha A] [--components M]
          [--t T] [--symmetrize or|and|average] [--local-scaling auto|0|J] [--tolerance TOL]
          [--ncv NCV] [--no-lock-check] [--eigensolver auto|cpu|gpu]
          [--max-matvecs N] [--time-limit SECONDS] [--metadata FILE[:COLUMN]]... [-o OUTDIR]
  run DATA -k K [knn and embed options] [--embed-k K'] [--transform none|anscombe|binB[+anscombe]]
          [--mask FILE|none] [--metadata FILE[:COLUMN]]... -o OUTDIR
                                           knn then embed (-k is the graph's k, --embed-k the embedding's)
  run --demo -o OUTDIR [--pdb ID|FILE --count N --size S --axis A --photons P --seed S --q-max Q]
                                           the built-in demo (simulated ubiquitin diffraction)
  run --session FILE [-o OUTDIR]           reproduce a saved session (GUI or CLI)
  simulate diffraction --pdb FILE|ID --count N [--size S] [--axis x|y|z|random]
          [--photons P] [--seed S] [--q-max Q] [--threads T] [--keep-water]
          [--mix blank=F,single=F,double=F] [--background P] [--fluence-jitter J]
          [--hot-pixels N] [--gap W] -o FILE.npy|FILE.cxi
                                           --hot-pixels/--gap: detector defects (N pixels far
                                           brighter than any, W zero rows and columns through
                                           the middle) with their mask (FILE.mask.npy, or the
                                           CXI file's /entry_1/data_1/mask)
  cluster EMBEDDINGDIR [--clusters K] [--coordinates M] [--max-clusters M] [--restarts R]
          [--seed S] -o FILE.npy           clusters: the k-NN graph's separate components,
                                           then k-means (k-means++ seeding) on dc1..dcM of the
                                           embedded one (M = K-1); K given, else the components
                                           or the largest eigengap; FILE.npy: a cluster per
                                           data point (-1: left out), FILE.json the facts
  bench [--backend ...] [--select ...] [-n N] [-d D] [-k K] [--data FILE] [--json FILE]
  bench embed [...]                        time the diffusion-map eigensolve
  submit --profile FILE DATA [knn options] -o OUTDIR   run on a cluster (mpirun or Slurm)
  trajectory EMBEDDINGDIR [--coordinate C | --phase A,B | --path FILE.npy [--axes 1,2] [--tube R]]
          [--bins B] [--fps F] [--scale S] [--log] [--data FILE] -o movie.gif|movie.mp4|FOLDER
                                           the images in order along dc C (or around the phase of
                                           dc A, dc B, or along a P x q path), each frame the mean
                                           of one of B bins of equal count (default 50)

Kernel: K_ij = exp(-r_ij^2 / (sigma_i sigma_j epsilon)), r^2 = d^2 (Euclidean) or 2 d (cosine,
Pearson: the squared distance of the unit-norm rows); sigma_i = r to the j-th neighbour,
j = min(7, K') by default (--local-scaling auto; 0 turns it off). --epsilon median (default):
the median over points of r^2 / (sigma_i sigma_j) to the K'-th neighbour; auto: Berry-
Giannakis-Harlim. Points joined only by weights < 1e-4 are left out and said so. The
eigensolve stops at --max-matvecs (default 20000) or --time-limit (default none) and says
why in one line; warnings flag localised coordinates and eigenvalues within 1e-6 of 1.

DATA: .npy, .npz (--dataset NAME, else its largest array), MNIST IDX (*-idx3-ubyte[.gz]),
a folder of PNG/TIFF images, a multi-page TIFF, MRC/MRCS, HDF5/CXI (--dataset PATH).
Ctrl-C cancels; nothing partial is left.
--mask (knn, run): distances use only the pixels valid in every frame, and say how many.
FILE: .npy or .mrc of the frame's shape, non-zero = valid (a stack: valid in every layer), or
a CXI/HDF5 file's mask by the CXI bits (bad: invalid, saturated, hot, dead, shadowed, ignore,
bad, missing). Without --mask: DATA.cxi's /entry_1/data_1/mask (or .../detector_1/mask),
else NAME.mask.npy beside NAME.EXT or the folder NAME; none: no mask. binB keeps a bin only
when all its pixels are valid. trajectory's movies keep the full frames (the GUI applies the
same mask).
-o OUTDIR is written whole or not at all; an existing folder holding other files (or another
command's result) is refused before the work starts unless --overwrite (knn, run). -o . writes
into the working folder in place; a folder above it (-o ..) is refused.

--metadata (repeatable): per-point columns of length N from FILE.npy (N or N x m), .csv/.tsv
with a header (numeric or categorical), FILE.cxi:/PATH (an HDF5 dataset) or MNIST labels
(*-labels-idx1-ubyte[.gz]); COLUMN picks a csv column or renames. NAME.labels.npy,
NAME.angles.npy, NAME.quaternions.npy and NAME.csv beside NAME.npy, the labels beside MNIST
images and a CXI file's /entry_1/sample_1 datasets are found without it. The columns go
into embedding.csv/.vtp; their correlation with each psi (Pearson, correlation ratio,
circular for angles) into embedding.json and one line.
)";

}  // namespace

int main(int argc, char** argv) {
  using namespace manifold;
  if (argc < 2 || !std::strcmp(argv[1], "--help") || !std::strcmp(argv[1], "-h") || !std::strcmp(argv[1], "help")) {
    std::fputs(kUsage, argc < 2 ? stderr : stdout);
    return argc < 2 ? 2 : 0;
  }
  const std::string cmd = argv[1];
  install_fatal_signal_notes("manifold");
  try {
    register_all_backends();
    if (cmd == "info") return cli::cmd_info(argc, argv);
    if (cmd == "knn") return cli::cmd_knn(argc, argv);
    if (cmd == "embed") return cli::cmd_embed(argc, argv);
    if (cmd == "run") return cli::cmd_run(argc, argv);
    if (cmd == "simulate") return cli::cmd_simulate(argc, argv);
    if (cmd == "bench" && argc > 2 && !std::strcmp(argv[2], "embed")) return cli::cmd_bench_embed(argc, argv);
    if (cmd == "bench") return cli::cmd_bench(argc, argv);
    if (cmd == "submit") return cli::cmd_submit(argc, argv);
    if (cmd == "trajectory") return cli::cmd_trajectory(argc, argv);
    if (cmd == "cluster") return cli::cmd_cluster(argc, argv);
    const std::string near = cli::nearest_name(cmd, {"info", "knn", "embed", "run", "simulate", "bench", "submit",
                                                     "trajectory", "cluster"});
    std::fprintf(stderr, "manifold: unknown command '%s' (%ssee manifold --help)\n", cmd.c_str(),
                 near.empty() ? "" : ("did you mean " + near + "? ").c_str());
    return 2;
  } catch (const cli::HelpPrinted&) {
    return 0;
  } catch (const Cancelled&) {
    std::fprintf(stderr, "\nmanifold: cancelled; no output written\n");
    return 1;
  } catch (const UsageError& e) {
    std::fprintf(stderr, "manifold: %s\n", e.what());
    return 2;
  } catch (const std::bad_alloc&) {
    std::fprintf(stderr, "manifold: out of memory\n");
    return 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "manifold: %s\n", e.what());
    return 1;
  }
}
