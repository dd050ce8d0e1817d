// The trajectory player on a simulated one-axis rotation: frames follow the
// true angle, the current bin is signalled for highlighting, play/pause and
// the scrub slider move through the frames, the bin count recomputes, GIF
// and PNG exports read back with Qt's image readers, cancel keeps the
// frames shown, and the export dialog opens where the last export went.
#include <QImageReader>
#include <QSignalSpy>
#include <QSlider>
#include <QSpinBox>
#include <QTemporaryDir>
#include <QtTest>

#include <algorithm>
#include <cmath>
#include <numeric>

#include "manifold/diffusion_map.h"
#include "manifold/movie.h"
#include "manifold/ui/loaded_dataset.h"
#include "manifold/ui/trajectory_player.h"
#include "ui_test_support.h"

using namespace manifold;
using namespace manifold::ui;
namespace t = manifold::ui::test;

namespace {

struct Rotation {
  std::shared_ptr<const LoadedDataset> dataset;  ///< raw photon counts
  std::shared_ptr<const DiffusionResult> result;
  std::vector<double> angles;
};

/// Diffraction of ubiquitin turning about x, embedded as the demo is
/// (t::embedded_rotation); the dataset its raw photon counts.
Rotation simulate_rotation(int64_t count) {
  t::EmbeddedRotation e = t::embedded_rotation(count, 5);
  Rotation r;
  r.angles = e.images.angles;
  r.result = std::make_shared<DiffusionResult>(std::move(e.embedding));
  const int64_t side = e.images.size;
  Dataset raw(e.images.count, side * side, std::move(e.images.images));
  raw.item_shape = {side, side};
  r.dataset = adoptDataset(std::move(raw), "rotation", "simulated", false);
  return r;
}

/// Spearman's correlation of frame order with each bin's circular mean
/// true angle, unwrapped along the frames (a full turn, either direction).
double spearman_of_frames(const TrajectoryFrames& f, const std::vector<double>& angles) {
  std::vector<double> a;
  for (const TrajectoryBin& b : f.bins) {
    double s = 0, c = 0;
    for (int64_t row : b.rows) {
      s += std::sin(angles[static_cast<size_t>(row)]);
      c += std::cos(angles[static_cast<size_t>(row)]);
    }
    const double mean = std::atan2(s, c);
    a.push_back(a.empty() ? mean : a.back() + std::remainder(mean - a.back(), 2 * M_PI));
  }
  std::vector<size_t> order(a.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::sort(order.begin(), order.end(), [&](size_t x, size_t y) { return a[x] < a[y]; });
  std::vector<double> rank(a.size());
  for (size_t i = 0; i < order.size(); ++i) rank[order[i]] = static_cast<double>(i);
  const double mean = (static_cast<double>(a.size()) - 1) / 2;
  double sxy = 0, sxx = 0;
  for (size_t i = 0; i < rank.size(); ++i) {
    sxy += (static_cast<double>(i) - mean) * (rank[i] - mean);
    sxx += (static_cast<double>(i) - mean) * (static_cast<double>(i) - mean);
  }
  return sxy / sxx;
}

bool wait_for_frames(TrajectoryPlayer& player) {
  QSignalSpy ready(&player, &TrajectoryPlayer::framesReady);
  QSignalSpy failed(&player, &TrajectoryPlayer::computeFailed);
  player.recompute();
  return ready.wait(60000) && failed.isEmpty();
}

}  // namespace

class TestTrajectoryPlayer : public QObject {
  Q_OBJECT

 private:
  Rotation rotation_;

 private Q_SLOTS:
  void initTestCase() {
    // The export folder is remembered in QSettings: the tests' own, not the user's.
    t::start_gui_tests();
    rotation_ = simulate_rotation(500);
    if (rotation_.angles.empty()) QSKIP("freesasa (1ubq.pdb) is not installed");
  }

  void framesFollowTheTrueAngle() {
    TrajectoryPlayer player;
    player.setEmbedding(rotation_.dataset, rotation_.result);
    player.setPhase(1, 2);
    player.setBins(25);
    QVERIFY(wait_for_frames(player));
    QCOMPARE(player.frameCount(), 25);
    QCOMPARE(player.currentImage().size(), QSize(24, 24));
    const double rho = spearman_of_frames(*player.frames(), rotation_.angles);
    qInfo("player, phase of psi1, psi2, 25 bins of 500 simulated patterns: Spearman %.4f", rho);
    QVERIFY2(std::abs(rho) >= 0.95, qPrintable(QString::number(rho)));
    QVERIFY(player.statusText().contains("25 frames"));
    // The widget as it looks, left with the other tests' artefacts.
    player.setCurrentFrame(6);
    QVERIFY(t::show_window(player, QSize(460, 520)));
    const QImage shot = player.grab().toImage();
    QVERIFY(shot.save(test::output_dir() + "/trajectory_player.png"));
  }

  void scrubbingSignalsTheCurrentBin() {
    TrajectoryPlayer player;
    player.setEmbedding(rotation_.dataset, rotation_.result);
    player.setCoordinate(1);
    player.setBins(20);
    QVERIFY(wait_for_frames(player));
    QSignalSpy bin(&player, &TrajectoryPlayer::currentBinChanged);
    auto* slider = player.findChild<QSlider*>();
    QVERIFY(slider);
    slider->setValue(7);
    QCOMPARE(player.currentFrame(), 7);
    QCOMPARE(bin.count(), 1);
    const auto points = bin.at(0).at(0).value<std::vector<int64_t>>();
    const auto rows = bin.at(0).at(1).value<std::vector<int64_t>>();
    QCOMPARE(points, player.frames()->bins[7].points);
    QCOMPARE(rows, player.frames()->bins[7].rows);
    QCOMPARE(static_cast<int>(rows.size()), 25);
    // The frame shown is bin 7's mean image: brighter where that bin's images are.
    player.setCurrentFrame(3);
    QCOMPARE(slider->value(), 3);
    QCOMPARE(bin.count(), 2);

    // Clearing the player clears the highlight.
    player.setEmbedding(nullptr, nullptr);
    QCOMPARE(player.frameCount(), 0);
    QCOMPARE(bin.count(), 3);
    QVERIFY(bin.at(2).at(0).value<std::vector<int64_t>>().empty());
  }

  void playAndPause() {
    TrajectoryPlayer player;
    player.setEmbedding(rotation_.dataset, rotation_.result);
    player.setBins(10);
    QVERIFY(wait_for_frames(player));
    player.setSpeed(50);
    QSignalSpy bin(&player, &TrajectoryPlayer::currentBinChanged);
    player.play();
    QVERIFY(player.playing());
    QTRY_VERIFY_WITH_TIMEOUT(bin.count() >= 12, 5000);  // past the end: it loops
    player.pause();
    QVERIFY(!player.playing());
    const int shown = player.currentFrame(), count = static_cast<int>(bin.count());
    QTest::qWait(200);
    QCOMPARE(player.currentFrame(), shown);
    QCOMPARE(static_cast<int>(bin.count()), count);

    // Keys: Home, Right, Left (wrapping), End, Space.
    QTest::keyClick(&player, Qt::Key_Home);
    QCOMPARE(player.currentFrame(), 0);
    QTest::keyClick(&player, Qt::Key_Right);
    QCOMPARE(player.currentFrame(), 1);
    QTest::keyClick(&player, Qt::Key_Left);
    QTest::keyClick(&player, Qt::Key_Left);
    QCOMPARE(player.currentFrame(), 9);
    QTest::keyClick(&player, Qt::Key_End);
    QCOMPARE(player.currentFrame(), 9);
    QTest::keyClick(&player, Qt::Key_Space);
    QVERIFY(player.playing());
    QTest::keyClick(&player, Qt::Key_Space);
    QVERIFY(!player.playing());
  }

  void binCountControlRecomputes() {
    TrajectoryPlayer player;
    player.setEmbedding(rotation_.dataset, rotation_.result);
    player.setBins(30);
    QVERIFY(wait_for_frames(player));
    QCOMPARE(player.frameCount(), 30);
    QSpinBox* bins = nullptr;
    for (QSpinBox* box : player.findChildren<QSpinBox*>())
      if (box->prefix().contains("bins")) bins = box;
    QVERIFY(bins);
    QCOMPARE(bins->maximum(), 500);  // never more bins than points
    QSignalSpy ready(&player, &TrajectoryPlayer::framesReady);
    bins->setValue(12);  // the control schedules one computation
    QVERIFY(ready.wait(60000));
    QCOMPARE(player.frameCount(), 12);
    QCOMPARE(ready.count(), 1);
  }

  void exportsReadBack() {
    TrajectoryPlayer player;
    player.setEmbedding(rotation_.dataset, rotation_.result);
    player.setPhase(1, 2);
    player.setBins(10);
    QVERIFY(wait_for_frames(player));
    QTemporaryDir dir;
    const int side = 24 * movie_scale(24, 24, 0);

    QSignalSpy done(&player, &TrajectoryPlayer::exportFinished);
    player.exportMovie(dir.filePath("frames"));
    QVERIFY(done.wait(60000));
    QVERIFY2(done.at(0).at(0).toBool(), qPrintable(done.at(0).at(1).toString()));
    for (int i = 1; i <= 10; ++i) {
      QImage frame(dir.filePath(QString("frames/frame_%1.png").arg(i, 4, 10, QChar('0'))));
      QCOMPARE(frame.size(), QSize(side, side));
    }
    QVERIFY(QFile::exists(dir.filePath("frames/trajectory.json")));

    if (!have_video_encoding()) QSKIP("built without FFmpeg");
    player.exportMovie(dir.filePath("movie.gif"));
    QVERIFY(done.wait(60000));
    QVERIFY2(done.at(1).at(0).toBool(), qPrintable(done.at(1).at(1).toString()));
    QImageReader gif(dir.filePath("movie.gif"));
    QVERIFY2(gif.canRead(), qPrintable(gif.errorString()));
    QCOMPARE(gif.imageCount(), 10);
    QCOMPARE(gif.size(), QSize(side, side));

    player.exportMovie(dir.filePath("movie.mp4"));
    QVERIFY(done.wait(60000));
    QVERIFY2(done.at(2).at(0).toBool(), qPrintable(done.at(2).at(1).toString()));
    QCOMPARE(read_movie(dir.filePath("movie.mp4").toStdString()).frames, 10);

    // A failed export says why in one line and leaves nothing.
    player.exportMovie(dir.filePath("missing/movie.gif"));
    QVERIFY(done.wait(60000));
    QVERIFY(!done.at(3).at(0).toBool());
    QVERIFY(!done.at(3).at(1).toString().contains('\n'));
    QVERIFY(!QFile::exists(dir.filePath("missing")));
  }

  void exportDialogOpensWhereTheLastExportWent() {
    TrajectoryPlayer player;
    player.setEmbedding(rotation_.dataset, rotation_.result);
    player.setBins(5);
    QVERIFY(wait_for_frames(player));
    QTemporaryDir dir;
    QVERIFY(QDir(dir.path()).mkpath("first"));
    QVERIFY(QDir(dir.path()).mkpath("second"));
    QSignalSpy done(&player, &TrajectoryPlayer::exportFinished);
    // A PNG series makes its own folder: the next dialog opens beside it.
    player.exportMovie(dir.filePath("first/frames"));
    QVERIFY(done.wait(60000));
    QVERIFY2(done.last().at(0).toBool(), qPrintable(done.last().at(1).toString()));
    QCOMPARE(TrajectoryPlayer::suggestedExportPath(MovieFormat::PngSeries), dir.filePath("first/trajectory"));
    QCOMPARE(TrajectoryPlayer::suggestedExportPath(MovieFormat::Gif), dir.filePath("first/trajectory.gif"));
    // A failed export is not where the next one goes.
    player.exportMovie(dir.filePath("missing/movie.gif"));
    QVERIFY(done.wait(60000));
    QVERIFY(!done.last().at(0).toBool());
    QCOMPARE(TrajectoryPlayer::suggestedExportPath(MovieFormat::PngSeries), dir.filePath("first/trajectory"));
    player.exportMovie(dir.filePath("second/more"));
    QVERIFY(done.wait(60000));
    QVERIFY(done.last().at(0).toBool());
    QCOMPARE(TrajectoryPlayer::suggestedExportPath(MovieFormat::Mp4), dir.filePath("second/trajectory.mp4"));
  }

  void cancelKeepsTheFramesShown() {
    // Enough pixels that averaging takes a while.
    const int64_t n = 3000, side = 96;
    std::vector<float> v(static_cast<size_t>(n * side * side));
    for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>(i % 251);
    Dataset big(n, side * side, std::move(v));
    big.item_shape = {side, side};
    auto result = std::make_shared<DiffusionResult>();
    result->n = n;
    result->m = 1;
    for (int64_t i = 0; i < n; ++i) {
      result->coordinates.push_back(static_cast<double>((i * 7919) % n));
      result->point_index.push_back(i);
    }
    TrajectoryPlayer player;
    player.setEmbedding(adoptDataset(std::move(big), "big", "generated", false), result);
    player.setBins(5);
    QVERIFY(wait_for_frames(player));
    const auto shown = player.frames();
    QSignalSpy failed(&player, &TrajectoryPlayer::computeFailed);
    QSignalSpy ready(&player, &TrajectoryPlayer::framesReady);
    player.setBins(7);
    player.recompute();
    player.cancel();
    QVERIFY(failed.wait(60000));
    QCOMPARE(failed.at(0).at(0).toString(), QString("cancelled"));
    QCOMPARE(ready.count(), 0);
    QCOMPARE(player.frames(), shown);
    QCOMPARE(player.frameCount(), 5);
    QVERIFY(player.statusText().contains("Cancelled"));
  }

  void pathFarFromEveryPointSaysSo() {
    TrajectoryPlayer player;
    player.setEmbedding(rotation_.dataset, rotation_.result);
    QSignalSpy failed(&player, &TrajectoryPlayer::computeFailed);
    player.setPath({100, 100, 101, 101}, 2, {1, 2}, 0.01);
    QCOMPARE(player.order(), TrajectoryPlayer::Order::Path);
    player.recompute();
    QVERIFY(failed.wait(60000));
    QVERIFY2(failed.at(0).at(0).toString().contains("no point lies within"), qPrintable(failed.at(0).at(0).toString()));
    QCOMPARE(player.frameCount(), 0);

    // A path through points picked in the view plays the points near it in
    // order: the first bin holds the first pick, the last bin the last.
    player.setPathThrough({10, 200, 400}, {1, 2});
    player.setBins(5);
    QVERIFY(wait_for_frames(player));
    QCOMPARE(player.frameCount(), 5);
    QCOMPARE(player.frames()->description, std::string("path of 3 vertices in dc1, dc2"));
    const auto& bins = player.frames()->bins;
    QVERIFY(std::find(bins.front().points.begin(), bins.front().points.end(), 10) != bins.front().points.end());
    QVERIFY(std::find(bins.back().points.begin(), bins.back().points.end(), 400) != bins.back().points.end());
  }
};

QTEST_MAIN(TestTrajectoryPlayer)
#include "test_trajectory_player.moc"
