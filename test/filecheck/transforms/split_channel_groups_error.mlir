// RUN: not xnpu-opt %s -p split-channel-groups 2>&1 | filecheck %s

// The mark on a depthwise conv whose input comes straight from the function's argument (no
// producing conv to split): one error line naming the op, no traceback.

func.func @no_producer(%x: tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32> {
  %wd = nn.constant dense<[[[[7.0]]], [[[8.0]]]]> : tensor<2x1x1x1xf32>
  %d = nn.conv2d %x, %wd {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 2 : i64, xnpu.channel_groups = array<i64: 0, 1>} : (tensor<1x2x4x4xf32>, tensor<2x1x1x1xf32>) -> tensor<1x2x4x4xf32> loc("dw")
  func.return %d : tensor<1x2x4x4xf32>
}

// CHECK: error: {{.*}}dw{{.*}}xnpu.channel_groups marks no splittable depthwise block
// CHECK-NOT: Traceback
