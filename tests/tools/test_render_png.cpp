// The SVG swimlanes as a browser-grade renderer draws them: `streamcheck
// render --format svg` on an example, rasterized by rsvg-convert, then read
// back pixel by pixel. Each lane must be painted in its own colour across the
// picture and the racing pair must carry its red outline, at the places the
// SVG itself declares.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <png.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "tests/temp_dir.h"
#include "tests/tools/command.h"

namespace streamcheck::tools {
namespace {

namespace fs = std::filesystem;

struct Rgb {
  int r, g, b;
  friend bool operator==(const Rgb&, const Rgb&) = default;
};

Rgb parse_hex(const std::string& hex) {
  const auto v = std::stoul(hex.substr(1), nullptr, 16);
  return {static_cast<int>((v >> 16) & 0xff), static_cast<int>((v >> 8) & 0xff), static_cast<int>(v & 0xff)};
}

bool near(Rgb a, Rgb b, int tolerance) {
  return std::abs(a.r - b.r) <= tolerance && std::abs(a.g - b.g) <= tolerance && std::abs(a.b - b.b) <= tolerance;
}

struct Picture {
  std::uint32_t width = 0, height = 0;
  std::vector<std::uint8_t> rgb;
  Rgb at(int x, int y) const {
    const std::size_t i = (static_cast<std::size_t>(y) * width + static_cast<std::size_t>(x)) * 3;
    return {rgb[i], rgb[i + 1], rgb[i + 2]};
  }
};

Picture read_png(const fs::path& file) {
  png_image image{};
  image.version = PNG_IMAGE_VERSION;
  if (!png_image_begin_read_from_file(&image, file.c_str()))
    throw std::runtime_error("cannot read " + file.string() + ": " + image.message);
  image.format = PNG_FORMAT_RGB;
  Picture p{image.width, image.height, std::vector<std::uint8_t>(PNG_IMAGE_SIZE(image))};
  if (!png_image_finish_read(&image, nullptr, p.rgb.data(), 0, nullptr))
    throw std::runtime_error("cannot decode " + file.string() + ": " + image.message);
  return p;
}

struct Box {
  int x, y, w, h;
  Rgb fill;
};

/// Where the group opened at `from` ends (groups nest).
std::size_t group_end(const std::string& svg, std::size_t from) {
  int depth = 0;
  for (std::size_t at = from; at < svg.size(); ++at) {
    if (svg.compare(at, 3, "<g ") == 0 || svg.compare(at, 3, "<g>") == 0) ++depth;
    if (svg.compare(at, 4, "</g>") == 0 && --depth == 0) return at;
  }
  return svg.size();
}

/// The `<rect>`s after `marker` in the SVG, up to the end of its group.
std::vector<Box> rects_after(const std::string& svg, const std::string& marker) {
  std::vector<Box> out;
  auto from = svg.find(marker);
  if (from == std::string::npos) return out;
  const std::string part = svg.substr(from, group_end(svg, from) - from);
  static const std::regex rect(
      R"re(<rect x="(\d+)" y="(\d+)" width="(\d+)" height="(\d+)"(?: rx="\d+")? fill="(#[0-9a-f]{6})")re");
  for (std::sregex_iterator it(part.begin(), part.end(), rect), end; it != end; ++it)
    out.push_back(
        {std::stoi((*it)[1]), std::stoi((*it)[2]), std::stoi((*it)[3]), std::stoi((*it)[4]), parse_hex((*it)[5])});
  return out;
}

std::string read_text(const fs::path& file) {
  std::ostringstream text;
  text << std::ifstream(file).rdbuf();
  return text.str();
}

/// The PNG has the size the SVG declares.
void expect_same_size(const std::string& svg, const Picture& png) {
  std::smatch size;
  ASSERT_TRUE(std::regex_search(svg, size, std::regex(R"re(<svg [^>]*width="(\d+)" height="(\d+)")re")));
  EXPECT_EQ(png.width, std::stoul(size[1]));
  EXPECT_EQ(png.height, std::stoul(size[2]));
}

/// The racing pair: `pairs` op boxes drawn with the red outline, filled inside.
void expect_racing_boxes(const std::string& svg, const Picture& png, std::size_t pairs) {
  const Rgb red = parse_hex("#d62728");
  std::vector<Box> racing;
  for (auto at = svg.find("<g class=\"op finding\">"); at != std::string::npos;
       at = svg.find("<g class=\"op finding\">", at + 1)) {
    const auto boxes = rects_after(svg.substr(at), "<g class=\"op finding\">");
    ASSERT_FALSE(boxes.empty());
    racing.push_back(boxes.front());
  }
  ASSERT_EQ(racing.size(), 2 * pairs) << svg;
  for (const auto& box : racing) {
    const int mid = box.y + box.h / 2;
    EXPECT_TRUE(near(png.at(box.x, mid), red, 40)) << "left edge of the box at x=" << box.x;
    EXPECT_TRUE(near(png.at(box.x + box.w / 2, box.y), red, 40)) << "top edge of the box at x=" << box.x;
    EXPECT_EQ(png.at(box.x + 5, mid), box.fill) << "inside of the box at x=" << box.x;
  }
}

/// A 10 k-op load / compute / store pipeline over a ring of 4 buffer pairs,
/// each hand-off ordered by an event -- except at batch `bug`, where compute
/// does not wait for the load: one data race among 10 018 ops.
std::string pipeline_trace(int batches, int bug) {
  std::string t = "stream load\nstream compute\nstream store\n";
  for (int k = 0; k < 4; ++k)
    t += fmt::format(
        "event loaded{0}\nevent computed{0}\nevent stored{0}\nbuffer In{0} 64K on load\n"
        "buffer Out{0} 64K on compute\n",
        k);
  for (int i = 0; i < batches; ++i) {
    const int k = i % 4;
    if (i >= 4) t += fmt::format("wait computed{} on load\n", k);  // In{k}'s last reader is done
    t += fmt::format("launch fill_in on load writes In{0}\nrecord loaded{0} on load\n", k);
    if (i != bug) t += fmt::format("wait loaded{} on compute\n", k);
    if (i >= 4) t += fmt::format("wait stored{} on compute\n", k);  // Out{k}'s last reader is done
    t += fmt::format(
        "launch transform on compute reads In{0} writes Out{0}\nrecord computed{0} on compute\n"
        "wait computed{0} on store\nlaunch drain on store reads Out{0}\nrecord stored{0} on store\n",
        k);
  }
  t += "sync device\n";
  for (int k = 0; k < 4; ++k) t += fmt::format("free In{0} on load\nfree Out{0} on compute\n", k);
  return t;
}

TEST(RenderPng, TenThousandOpTraceRendersWindowedAndItsFindingAlone) {
  if (run_shell("command -v rsvg-convert").exit_code != 0)
    GTEST_SKIP() << "rsvg-convert is not installed (Debian librsvg2-bin; bash tools/run.sh test installs it)";
  const tests::FreshTempDir dir("png10k");
  const fs::path trace = dir.write("pipeline.trace", pipeline_trace(3334, 1234));
  const std::string bin = STREAMCHECK_BIN;

  // The whole run: a window of the first calls, folded into bands, that
  // rsvg-convert rasterizes at the size the SVG declares.
  const fs::path whole_svg = dir.file("whole.svg"), whole_png = dir.file("whole.png");
  const auto whole = run_shell(bin + " render " + trace.string() + " --format svg -o " + whole_svg.string());
  ASSERT_EQ(whole.exit_code, 1) << whole.out;
  const std::string svg = read_text(whole_svg);
  EXPECT_NE(svg.find("10018 ops, 1 finding"), std::string::npos);  // 3 x 3334 kernels, 8 allocs, 8 frees
  EXPECT_NE(svg.find("drew the first 240 calls"), std::string::npos);
  ASSERT_EQ(run_shell("rsvg-convert -o " + whole_png.string() + " " + whole_svg.string()).exit_code, 0);
  expect_same_size(svg, read_png(whole_png));

  // Finding 1 alone: its two ops in red, a handful of calls around them.
  const fs::path finding_svg = dir.file("finding.svg"), finding_png = dir.file("finding.png");
  const auto one =
      run_shell(bin + " render " + trace.string() + " --format svg --finding 1 -o " + finding_svg.string());
  ASSERT_EQ(one.exit_code, 1) << one.out;
  ASSERT_EQ(run_shell("rsvg-convert -o " + finding_png.string() + " " + finding_svg.string()).exit_code, 0);
  const std::string picture = read_text(finding_svg);
  const Picture png = read_png(finding_png);
  expect_same_size(picture, png);
  expect_racing_boxes(picture, png, 1);
  EXPECT_LE(std::count(picture.begin(), picture.end(), '\n'), 200) << "a finding's picture stays small";
  EXPECT_NE(picture.find("line 12357 (launch fill_in on load writes In2)"), std::string::npos) << picture;
  EXPECT_NE(picture.find(">loaded2</text>"), std::string::npos) << picture;

  // docs/pictures/ holds this picture: STREAMCHECK_PICTURES_DIR=docs/pictures remakes it.
  if (const char* keep = std::getenv("STREAMCHECK_PICTURES_DIR")) {
    fs::copy_file(finding_svg, fs::path(keep) / "pipeline-10k-finding-1.svg", fs::copy_options::overwrite_existing);
    fs::copy_file(finding_png, fs::path(keep) / "pipeline-10k-finding-1.png", fs::copy_options::overwrite_existing);
  }
}

TEST(RenderPng, RasterizedSwimlanesShowEveryLaneAndTheRacingPair) {
  if (run_shell("command -v rsvg-convert").exit_code != 0)
    GTEST_SKIP() << "rsvg-convert is not installed (Debian librsvg2-bin; bash tools/run.sh test installs it)";
  const tests::FreshTempDir dir("png");
  const fs::path svg_file = dir.file("race.svg"), png_file = dir.file("race.png");
  const auto render = run_shell(std::string(STREAMCHECK_BIN) + " render " + STREAMCHECK_EXAMPLES_DIR +
                                "/01_missing_wait.trace --format svg -o " + svg_file.string());
  ASSERT_EQ(render.exit_code, 1) << render.out;  // 1: the drawn schedule has findings
  const auto raster = run_shell("rsvg-convert -o " + png_file.string() + " " + svg_file.string());
  ASSERT_EQ(raster.exit_code, 0) << raster.out;

  const std::string svg = read_text(svg_file);
  const Picture png = read_png(png_file);
  expect_same_size(svg, png);

  // Lanes: s1 and s2 (the hidden stream of plain buffer / free carries no op
  // here, so it has no lane), each a full-width band of its own fill colour,
  // checked left of the labels and at the far right.
  const auto lanes = rects_after(svg, "<g id=\"lanes\">");
  ASSERT_EQ(lanes.size(), 2u) << svg;
  for (const auto& lane : lanes) {
    const int mid = lane.y + lane.h / 2;
    EXPECT_EQ(png.at(4, mid), lane.fill) << "lane at y=" << lane.y;
    EXPECT_EQ(png.at(lane.w - 4, mid), lane.fill) << "lane at y=" << lane.y;
  }
  EXPECT_NE(lanes[0].fill, lanes[1].fill) << "neighbouring lanes must be told apart";

  // The racing pair: two op boxes drawn with the red outline, filled inside.
  expect_racing_boxes(svg, png, 1);
}

}  // namespace
}  // namespace streamcheck::tools
