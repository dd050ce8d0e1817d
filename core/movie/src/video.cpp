// Animated GIF and MP4 through FFmpeg's libraries (libavformat muxes,
// libavcodec encodes and decodes, libswscale turns grey into YUV 4:2:0).
// Without FFmpeg in the build both formats are refused with one line.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>

#include "manifold/error.h"
#include "manifold/movie.h"
#include "manifold/output.h"

#ifdef MANIFOLD_HAVE_FFMPEG
extern "C" {
#include <libavcodec/avcodec.h>
#include <libavformat/avformat.h>
#include <libavutil/imgutils.h>
#include <libavutil/opt.h>
#include <libswscale/swscale.h>
}
#endif

namespace manifold {

std::string write_video(const std::string& path, MovieFormat format, const GreyFrames& frames, double fps);

#ifndef MANIFOLD_HAVE_FFMPEG

bool have_video_encoding() { return false; }

std::string write_video(const std::string& path, MovieFormat format, const GreyFrames&, double) {
  throw Error(
      path + ": this build has no FFmpeg libraries for " + to_string(format) +
      " (install libavformat-dev, libavcodec-dev, libswscale-dev and rebuild), or write PNG frames to a folder");
}

MovieInfo read_movie(const std::string& path, std::vector<std::vector<uint8_t>>*) {
  throw Error(path + ": this build has no FFmpeg libraries to read movies");
}

#else

namespace {

std::string av_message(int code) {
  char text[AV_ERROR_MAX_STRING_SIZE] = {};
  av_strerror(code, text, sizeof text);
  return text;
}

void check(int code, const std::string& path, const char* what) {
  if (code < 0) throw Error(path + ": " + what + " failed (" + av_message(code) + ")");
}

// ---- owners of FFmpeg objects ---------------------------------------------

struct CodecContextFree {
  void operator()(AVCodecContext* c) const { avcodec_free_context(&c); }
};
struct FrameFree {
  void operator()(AVFrame* f) const { av_frame_free(&f); }
};
struct PacketFree {
  void operator()(AVPacket* p) const { av_packet_free(&p); }
};
struct SwsFree {
  void operator()(SwsContext* s) const { sws_freeContext(s); }
};
struct InputClose {
  void operator()(AVFormatContext* f) const { avformat_close_input(&f); }
};
using CodecContextPtr = std::unique_ptr<AVCodecContext, CodecContextFree>;
using FramePtr = std::unique_ptr<AVFrame, FrameFree>;
using PacketPtr = std::unique_ptr<AVPacket, PacketFree>;

/// A growing, seekable file in memory: the MP4 muxer seeks back to write
/// the index, and the whole movie is written to disk in one atomic step.
struct MemoryFile {
  std::vector<uint8_t> bytes;
  int64_t pos = 0;

  static int write(void* opaque, uint8_t* buf, int size) {
    auto* f = static_cast<MemoryFile*>(opaque);
    const size_t end = static_cast<size_t>(f->pos) + static_cast<size_t>(size);
    if (f->bytes.size() < end) f->bytes.resize(end);
    std::memcpy(f->bytes.data() + f->pos, buf, static_cast<size_t>(size));
    f->pos = static_cast<int64_t>(end);
    return size;
  }
  static int64_t seek(void* opaque, int64_t offset, int whence) {
    auto* f = static_cast<MemoryFile*>(opaque);
    const int64_t size = static_cast<int64_t>(f->bytes.size());
    if (whence & AVSEEK_SIZE) return size;
    int64_t to = offset;
    if ((whence & 3) == SEEK_CUR) to = f->pos + offset;
    if ((whence & 3) == SEEK_END) to = size + offset;
    if (to < 0) return AVERROR(EINVAL);
    f->pos = to;
    return to;
  }
};

/// A muxer writing into a MemoryFile.
struct Output {
  MemoryFile file;
  AVIOContext* io = nullptr;
  AVFormatContext* format = nullptr;

  Output(const char* muxer, const std::string& path) {
    check(avformat_alloc_output_context2(&format, nullptr, muxer, path.c_str()), path, "starting the muxer");
    constexpr int kBuffer = 1 << 16;
    auto* buffer = static_cast<unsigned char*>(av_malloc(kBuffer));
    io = avio_alloc_context(buffer, kBuffer, 1, &file, nullptr, &MemoryFile::write, &MemoryFile::seek);
    if (!io) {
      av_free(buffer);
      avformat_free_context(format);
      throw Error(path + ": out of memory for the muxer");
    }
    format->pb = io;
    format->flags |= AVFMT_FLAG_CUSTOM_IO;
  }
  ~Output() {
    avformat_free_context(format);
    if (io) av_freep(&io->buffer);
    avio_context_free(&io);
  }
  Output(const Output&) = delete;
  Output& operator=(const Output&) = delete;
};

struct EncoderChoice {
  const AVCodec* codec = nullptr;
  AVPixelFormat pixel_format = AV_PIX_FMT_NONE;
  std::string name;
};

bool supports(const AVCodec* codec, AVPixelFormat f) {
  if (!codec->pix_fmts) return true;
  for (const AVPixelFormat* p = codec->pix_fmts; *p != AV_PIX_FMT_NONE; ++p)
    if (*p == f) return true;
  return false;
}

/// GIF: 8-bit grey as is. MP4: H.264 (libx264 where libavcodec has it),
/// else MPEG-4 Part 2, in YUV 4:2:0.
EncoderChoice choose_encoder(MovieFormat format, const std::string& path) {
  EncoderChoice c;
  if (format == MovieFormat::Gif) {
    c.codec = avcodec_find_encoder(AV_CODEC_ID_GIF);
    c.pixel_format = c.codec && supports(c.codec, AV_PIX_FMT_GRAY8) ? AV_PIX_FMT_GRAY8 : AV_PIX_FMT_PAL8;
    c.name = "gif";
  } else {
    for (const char* name : {"libx264", "libopenh264", "mpeg4"}) {
      c.codec = avcodec_find_encoder_by_name(name);
      if (c.codec && supports(c.codec, AV_PIX_FMT_YUV420P)) break;
      c.codec = nullptr;
    }
    c.pixel_format = AV_PIX_FMT_YUV420P;
    if (c.codec) c.name = c.codec->id == AV_CODEC_ID_H264 ? std::string("h264 (") + c.codec->name + ")" : c.codec->name;
  }
  if (!c.codec) throw Error(path + ": the installed libavcodec has no " + to_string(format) + " encoder");
  return c;
}

/// Frame rate as a rational (1/100 s ticks for GIF, whose delays are in them).
AVRational frame_rate(double fps) { return av_d2q(fps, 100000); }

CodecContextPtr open_encoder(const EncoderChoice& e, MovieFormat format, int width, int height, double fps,
                             const AVFormatContext* muxer, const std::string& path) {
  CodecContextPtr c(avcodec_alloc_context3(e.codec));
  if (!c) throw Error(path + ": out of memory for the encoder");
  c->width = width;
  c->height = height;
  c->pix_fmt = e.pixel_format;
  c->framerate = frame_rate(fps);
  c->time_base = format == MovieFormat::Gif ? AVRational{1, 100} : av_inv_q(c->framerate);
  c->gop_size = 12;
  if (format == MovieFormat::Mp4) {
    c->color_range = AVCOL_RANGE_MPEG;
    if (e.codec->id == AV_CODEC_ID_H264) {
      av_opt_set(c->priv_data, "crf", "18", 0);  // visually lossless for averaged frames
      av_opt_set(c->priv_data, "preset", "medium", 0);
    } else {
      c->flags |= AV_CODEC_FLAG_QSCALE;
      c->global_quality = FF_QP2LAMBDA * 2;
    }
  }
  if (muxer->oformat->flags & AVFMT_GLOBALHEADER) c->flags |= AV_CODEC_FLAG_GLOBAL_HEADER;
  check(avcodec_open2(c.get(), e.codec, nullptr), path, "opening the encoder");
  return c;
}

/// Sends one frame (null: flush) and writes every packet the encoder returns.
void encode(AVCodecContext* c, AVFrame* frame, AVFormatContext* muxer, AVStream* stream, AVPacket* packet,
            int64_t frame_ticks, const std::string& path) {
  check(avcodec_send_frame(c, frame), path, "encoding");
  for (;;) {
    const int r = avcodec_receive_packet(c, packet);
    if (r == AVERROR(EAGAIN) || r == AVERROR_EOF) return;
    check(r, path, "encoding");
    if (packet->duration <= 0) packet->duration = frame_ticks;  // the GIF muxer's delay of the last frame
    av_packet_rescale_ts(packet, c->time_base, stream->time_base);
    packet->stream_index = stream->index;
    check(av_interleaved_write_frame(muxer, packet), path, "writing");
  }
}

/// Copies grey frame `i` into `frame`, padding the encoder's even size by
/// repeating the last row and column.
void fill_grey(const GreyFrames& g, size_t i, AVFrame* grey) {
  const uint8_t* src = g.frame(i);
  for (int y = 0; y < grey->height; ++y) {
    const uint8_t* row = src + static_cast<size_t>(std::min(y, g.height - 1)) * g.width;
    uint8_t* out = grey->data[0] + static_cast<ptrdiff_t>(y) * grey->linesize[0];
    std::memcpy(out, row, static_cast<size_t>(g.width));
    for (int x = g.width; x < grey->width; ++x) out[x] = row[g.width - 1];
  }
}

FramePtr allocate_frame(AVPixelFormat format, int width, int height, const std::string& path) {
  FramePtr f(av_frame_alloc());
  if (!f) throw Error(path + ": out of memory for a frame");
  f->format = format;
  f->width = width;
  f->height = height;
  check(av_frame_get_buffer(f.get(), 0), path, "allocating a frame");
  return f;
}

/// 256 grey levels, for an encoder that takes only a palette.
void grey_palette(AVFrame* f) {
  auto* palette = reinterpret_cast<uint32_t*>(f->data[1]);
  for (uint32_t v = 0; v < 256; ++v) palette[v] = 0xFF000000u | (v << 16) | (v << 8) | v;
}

/// One decoded frame's grey levels: the luma plane, or the mean of R, G, B.
std::vector<uint8_t> grey_of(const AVFrame* f, const std::string& path) {
  std::vector<uint8_t> out(static_cast<size_t>(f->width) * f->height);
  const auto format = static_cast<AVPixelFormat>(f->format);
  const AVPixFmtDescriptor* d = av_pix_fmt_desc_get(format);
  if (!d) throw Error(path + ": decoded frames have an unknown pixel format");
  const bool rgb = d->flags & AV_PIX_FMT_FLAG_RGB;
  const bool palette = format == AV_PIX_FMT_PAL8;
  if (rgb && !(d->nb_components >= 3 && d->comp[0].depth == 8 && d->comp[0].step == 4))
    throw Error(path + ": decoded frames are " + d->name + ", not read here");
  for (int y = 0; y < f->height; ++y) {
    const uint8_t* row = f->data[0] + static_cast<ptrdiff_t>(y) * f->linesize[0];
    for (int x = 0; x < f->width; ++x) {
      uint8_t v;
      if (palette) {
        const uint32_t c = reinterpret_cast<const uint32_t*>(f->data[1])[row[x]];
        v = static_cast<uint8_t>(((c & 0xFF) + ((c >> 8) & 0xFF) + ((c >> 16) & 0xFF) + 1) / 3);
      } else if (rgb) {
        const uint8_t* p = row + 4 * x;
        v = static_cast<uint8_t>((p[d->comp[0].offset] + p[d->comp[1].offset] + p[d->comp[2].offset] + 1) / 3);
      } else {
        v = row[x];  // grey or the Y plane of YUV
      }
      out[static_cast<size_t>(y) * f->width + x] = v;
    }
  }
  return out;
}

}  // namespace

bool have_video_encoding() { return true; }

namespace {
/// FFmpeg's own notes (an encoder's statistics) stay off stderr: failures
/// reach the user as one Error line instead.
void quiet_ffmpeg() { av_log_set_level(AV_LOG_ERROR); }
}  // namespace

std::string write_video(const std::string& path, MovieFormat format, const GreyFrames& g, double fps) {
  quiet_ffmpeg();
  const EncoderChoice e = choose_encoder(format, path);
  // YUV 4:2:0 halves the chroma planes: its encoders need an even size.
  const bool even = format == MovieFormat::Mp4;
  const int width = even ? (g.width + 1) / 2 * 2 : g.width, height = even ? (g.height + 1) / 2 * 2 : g.height;

  Output out(format == MovieFormat::Gif ? "gif" : "mp4", path);
  CodecContextPtr c = open_encoder(e, format, width, height, fps, out.format, path);
  AVStream* stream = avformat_new_stream(out.format, nullptr);
  if (!stream) throw Error(path + ": out of memory for the stream");
  check(avcodec_parameters_from_context(stream->codecpar, c.get()), path, "setting up the stream");
  stream->time_base = c->time_base;
  stream->avg_frame_rate = c->framerate;
  check(avformat_write_header(out.format, nullptr), path, "writing the header");

  FramePtr grey = allocate_frame(AV_PIX_FMT_GRAY8, width, height, path);
  FramePtr coded = e.pixel_format == AV_PIX_FMT_GRAY8 ? nullptr : allocate_frame(e.pixel_format, width, height, path);
  std::unique_ptr<SwsContext, SwsFree> to_yuv;
  if (e.pixel_format == AV_PIX_FMT_YUV420P) {
    to_yuv.reset(sws_getContext(width, height, AV_PIX_FMT_GRAY8, width, height, AV_PIX_FMT_YUV420P, SWS_POINT, nullptr,
                                nullptr, nullptr));
    if (!to_yuv) throw Error(path + ": libswscale cannot convert grey to YUV 4:2:0");
  }
  PacketPtr packet(av_packet_alloc());
  if (!packet) throw Error(path + ": out of memory for a packet");
  const double ticks_per_frame = format == MovieFormat::Gif ? 100.0 / fps : 1.0;
  const int64_t frame_ticks = std::max<int64_t>(1, std::llround(ticks_per_frame));

  for (size_t i = 0; i < g.count; ++i) {
    check(av_frame_make_writable(grey.get()), path, "encoding");
    fill_grey(g, i, grey.get());
    AVFrame* frame = grey.get();
    if (coded) {
      check(av_frame_make_writable(coded.get()), path, "encoding");
      if (to_yuv) {
        sws_scale(to_yuv.get(), grey->data, grey->linesize, 0, height, coded->data, coded->linesize);
      } else {  // PAL8: grey levels index a grey palette
        av_image_copy_plane(coded->data[0], coded->linesize[0], grey->data[0], grey->linesize[0], width, height);
        grey_palette(coded.get());
      }
      frame = coded.get();
    }
    frame->pts = std::llround(static_cast<double>(i) * ticks_per_frame);
    encode(c.get(), frame, out.format, stream, packet.get(), frame_ticks, path);
  }
  encode(c.get(), nullptr, out.format, stream, packet.get(), frame_ticks, path);
  check(av_write_trailer(out.format), path, "finishing the file");
  write_file_atomically(path, out.file.bytes.data(), out.file.bytes.size());
  return e.name;
}

MovieInfo read_movie(const std::string& path, std::vector<std::vector<uint8_t>>* grey) {
  quiet_ffmpeg();
  AVFormatContext* raw = nullptr;
  check(avformat_open_input(&raw, path.c_str(), nullptr, nullptr), path, "opening");
  std::unique_ptr<AVFormatContext, InputClose> input(raw);
  check(avformat_find_stream_info(input.get(), nullptr), path, "reading the stream facts");
  const int index = av_find_best_stream(input.get(), AVMEDIA_TYPE_VIDEO, -1, -1, nullptr, 0);
  check(index, path, "finding a video stream");
  AVStream* stream = input->streams[index];
  const AVCodec* decoder = avcodec_find_decoder(stream->codecpar->codec_id);
  if (!decoder) throw Error(path + ": no decoder for its codec");
  CodecContextPtr c(avcodec_alloc_context3(decoder));
  check(avcodec_parameters_to_context(c.get(), stream->codecpar), path, "setting up the decoder");
  check(avcodec_open2(c.get(), decoder, nullptr), path, "opening the decoder");

  MovieInfo info;
  info.codec = decoder->name;
  info.width = stream->codecpar->width;
  info.height = stream->codecpar->height;
  PacketPtr packet(av_packet_alloc());
  FramePtr frame(av_frame_alloc());
  int64_t first_pts = AV_NOPTS_VALUE;
  auto drain = [&] {
    for (;;) {
      const int r = avcodec_receive_frame(c.get(), frame.get());
      if (r == AVERROR(EAGAIN) || r == AVERROR_EOF) return;
      check(r, path, "decoding");
      if (info.frames == 0) first_pts = frame->best_effort_timestamp;
      if (info.frames == 1 && first_pts != AV_NOPTS_VALUE)
        info.seconds_per_frame = av_q2d(stream->time_base) *
                                 static_cast<double>(frame->best_effort_timestamp - first_pts);
      ++info.frames;
      if (grey) grey->push_back(grey_of(frame.get(), path));
      av_frame_unref(frame.get());
    }
  };
  while (av_read_frame(input.get(), packet.get()) >= 0) {
    if (packet->stream_index == index) {
      const int r = avcodec_send_packet(c.get(), packet.get());
      av_packet_unref(packet.get());
      check(r, path, "decoding");
      drain();
    } else {
      av_packet_unref(packet.get());
    }
  }
  check(avcodec_send_packet(c.get(), nullptr), path, "decoding");
  drain();
  return info;
}

#endif

}  // namespace manifold
