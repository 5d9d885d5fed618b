#version 450
// n-dimensional strided copy of 4-byte words: one invocation per word.
// Word g of the box (row-major over extent[0..rank)) is read at
//   src_offset + sum_i idx_i * src_stride[i]   and written at   dst_offset + sum_i idx_i * dst_stride[i]
// (all in words, relative to the bound ranges).
layout(local_size_x = 64) in;

layout(std430, set = 0, binding = 0) readonly buffer Src { uint src_words[]; };
layout(std430, set = 0, binding = 1) writeonly buffer Dst { uint dst_words[]; };

layout(push_constant) uniform Params {
  uint rank;
  uint total;
  uint src_offset;
  uint dst_offset;
  uint extent[6];
  uint src_stride[6];
  uint dst_stride[6];
} p;

void main() {
  uint g = gl_GlobalInvocationID.y * (gl_NumWorkGroups.x * 64u) + gl_GlobalInvocationID.x;
  if (g >= p.total) return;
  uint rem = g;
  uint s = p.src_offset;
  uint d = p.dst_offset;
  for (int i = int(p.rank) - 1; i >= 0; --i) {
    uint e = p.extent[i];
    uint idx = rem % e;
    rem /= e;
    s += idx * p.src_stride[i];
    d += idx * p.dst_stride[i];
  }
  dst_words[d] = src_words[s];
}
