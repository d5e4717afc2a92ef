import { Body, Controller, Get, NotFoundException, Param, Post } from '@nestjs/common';
import {
  InjectFlowProducer,
  InjectQueue,
  type FlowProducer,
  type JobInfo,
  type WorkQueue,
} from '../src/index.js';
import { CreateOrderDto } from './create-order.dto.js';
import { ORDERS, PAYMENTS, STOCK, type Order, type Shipment } from './orders.js';

/**
 * An order is a flow: the order job (in `orders`) waits for its payment (in `payments`) and one
 * stock reservation per item (in `stock`), then ships with their results. A declined payment
 * fails the order at once and cancels the reservations that have not run.
 */
@Controller('orders')
export class OrdersController {
  constructor(
    @InjectFlowProducer() private readonly flows: FlowProducer,
    @InjectQueue(ORDERS) private readonly orders: WorkQueue<Order, Shipment>,
  ) {}

  @Post()
  async create(@Body() body: CreateOrderDto): Promise<{ id: string; children: string[] }> {
    const { customer, amountCents, items, decline } = body;
    const added = await this.flows.add({
      queue: ORDERS,
      data: { customer, amountCents, items: items.map(({ sku, qty }) => ({ sku, qty })) },
      children: [
        { queue: PAYMENTS, data: { customer, amountCents, decline } },
        ...items.map(({ sku, qty }) => ({ queue: STOCK, data: { sku, qty } })),
      ],
    });
    return {
      id: added.job.id,
      children: (added.children ?? []).map((c) => `${c.job.queue}:${c.job.id}`),
    };
  }

  /**
   * The order's state: `waiting-children` with how far its children are, then `pending` /
   * `leased`, `completed` with the shipment (results are kept), or `dead` with the reason.
   */
  @Get(':id')
  async get(@Param('id') id: string): Promise<JobInfo<Order, Shipment>> {
    const info = await this.orders.getJob(id);
    if (!info) throw new NotFoundException(`no order ${id}`);
    return info;
  }
}
