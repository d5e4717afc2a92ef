import { NonRetryableError, Process, Processor, type Job } from '../src/index.js';
import {
  ORDERS,
  PAYMENTS,
  STOCK,
  type Order,
  type OrderItem,
  type PaymentJob,
  type PaymentResult,
  type Shipment,
  type StockResult,
} from './orders.js';

/** Charges an order (a child of it, in `payments`). A declined card fails the order. */
@Processor(PAYMENTS, { concurrency: 5 })
export class PaymentProcessor {
  @Process()
  charge(job: Job<PaymentJob>): PaymentResult {
    if (job.data.decline) throw new NonRetryableError('card declined');
    return { chargeId: `ch-${job.id}` };
  }
}

/** Reserves one item of an order (a child of it, in `stock`). */
@Processor(STOCK, { concurrency: 5 })
export class StockProcessor {
  @Process()
  reserve(job: Job<OrderItem>): StockResult {
    return { sku: job.data.sku, reserved: job.data.qty };
  }
}

/** Ships an order once its payment and its items are done: their results come with the job. */
@Processor(ORDERS, { concurrency: 5 })
export class OrderProcessor {
  @Process()
  async ship(job: Job<Order>): Promise<Shipment> {
    const results = await job.getChildrenResults<PaymentResult | StockResult>();
    const reserved: StockResult[] = [];
    let chargeId = '';
    for (const [key, value] of Object.entries(results)) {
      if (key.startsWith(`${PAYMENTS}:`)) chargeId = (value as PaymentResult).chargeId;
      else reserved.push(value as StockResult);
    }
    return { shipmentId: `sh-${job.id}`, chargeId, reserved };
  }
}
